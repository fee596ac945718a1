//! Scalar semantics: operators, float methods and casts, as the Rust that codegen emits
//! evaluates them; where that Rust panics, an error.

use super::RtVal;
use crate::ir::{BinOp, Ty, UnOp};

pub(super) fn unary(op: UnOp, a: RtVal) -> Result<RtVal, String> {
    Ok(match (op, a) {
        (UnOp::Neg, RtVal::F(x)) => RtVal::F(-x),
        (UnOp::Neg, RtVal::I(x)) => {
            RtVal::I(x.checked_neg().ok_or("integer overflow in negation")?)
        }
        (UnOp::Not, RtVal::B(x)) => RtVal::B(!x),
        (UnOp::Not, RtVal::I(x)) => RtVal::I(!x),
        (UnOp::Test(t), RtVal::F(x)) => RtVal::B(t.holds(x)),
        (op, a) => return Err(format!("{op:?} of {a:?}")),
    })
}

pub(super) fn binary(op: BinOp, a: RtVal, b: RtVal) -> Result<RtVal, String> {
    use BinOp::*;
    use RtVal::{B, F, I};
    let overflow = || format!("integer overflow in {a:?} {} {b:?}", op.symbol());
    Ok(match (a, b) {
        (F(x), F(y)) => match op {
            Add => F(x + y),
            Sub => F(x - y),
            Mul => F(x * y),
            Div => F(x / y),
            Rem => F(x % y),
            Lt => B(x < y),
            Le => B(x <= y),
            Gt => B(x > y),
            Ge => B(x >= y),
            Eq => B(x == y),
            Ne => B(x != y),
            And | Or | IntLike => return Err(format!("`{}` of floats", op.symbol())),
        },
        (I(x), I(y)) => match op {
            Add => I(x.checked_add(y).ok_or_else(overflow)?),
            Sub => I(x.checked_sub(y).ok_or_else(overflow)?),
            Mul => I(x.checked_mul(y).ok_or_else(overflow)?),
            Div if y == 0 => return Err("integer division by zero".into()),
            Div => I(x.checked_div(y).ok_or_else(overflow)?),
            Rem if y == 0 => return Err("integer remainder by zero".into()),
            Rem => I(x.checked_rem(y).ok_or_else(overflow)?),
            Lt => B(x < y),
            Le => B(x <= y),
            Gt => B(x > y),
            Ge => B(x >= y),
            Eq => B(x == y),
            Ne => B(x != y),
            IntLike => I(x),
            And | Or => return Err(format!("`{}` of integers", op.symbol())),
        },
        (B(x), B(y)) => match op {
            And => B(x && y),
            Or => B(x || y),
            Eq => B(x == y),
            Ne => B(x != y),
            Lt => B(!x & y),
            Le => B(x <= y),
            Gt => B(x & !y),
            Ge => B(x >= y),
            _ => return Err(format!("`{}` of bools", op.symbol())),
        },
        _ => return Err(format!("`{}` of {a:?} and {b:?}", op.symbol())),
    })
}

/// Float methods by name, receiver first (`atan2(y, x)` is `y.atan2(x)`).
pub fn math(name: &str, args: &[RtVal]) -> Result<RtVal, String> {
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!("`{name}` takes {n} arguments, got {}", args.len()))
        }
    };
    let float = |k: usize| {
        args[k]
            .as_float()
            .ok_or_else(|| format!("argument {k} of `{name}` is {:?}, not a float", args[k]))
    };
    if let Some(op) = unary_method(name) {
        arity(1)?;
        return Ok(RtVal::F(op(float(0)?)));
    }
    if let Some(op) = binary_method(name) {
        arity(2)?;
        return Ok(RtVal::F(op(float(0)?, float(1)?)));
    }
    match name {
        "powi" => {
            arity(2)?;
            let n = args[1]
                .as_int()
                .ok_or_else(|| format!("the exponent of `powi` is {:?}", args[1]))?;
            let n = i32::try_from(n)
                .map_err(|_| format!("the exponent {n} of `powi` does not fit i32"))?;
            Ok(RtVal::F(float(0)?.powi(n)))
        }
        "mul_add" => {
            arity(3)?;
            Ok(RtVal::F(float(0)?.mul_add(float(1)?, float(2)?)))
        }
        _ => Err(format!("unknown float method `{name}`")),
    }
}

/// One-argument float methods by name.
fn unary_method(name: &str) -> Option<fn(f64) -> f64> {
    match name {
        "sin" => Some(f64::sin),
        "cos" => Some(f64::cos),
        "tan" => Some(f64::tan),
        "asin" => Some(f64::asin),
        "acos" => Some(f64::acos),
        "atan" => Some(f64::atan),
        "sinh" => Some(f64::sinh),
        "cosh" => Some(f64::cosh),
        "tanh" => Some(f64::tanh),
        "asinh" => Some(f64::asinh),
        "acosh" => Some(f64::acosh),
        "atanh" => Some(f64::atanh),
        "exp" => Some(f64::exp),
        "exp2" => Some(f64::exp2),
        "exp_m1" => Some(f64::exp_m1),
        "ln" => Some(f64::ln),
        "log10" => Some(f64::log10),
        "log2" => Some(f64::log2),
        "ln_1p" => Some(f64::ln_1p),
        "sqrt" => Some(f64::sqrt),
        "cbrt" => Some(f64::cbrt),
        "abs" => Some(f64::abs),
        "signum" => Some(f64::signum),
        "recip" => Some(f64::recip),
        "floor" => Some(f64::floor),
        "ceil" => Some(f64::ceil),
        "round" => Some(f64::round),
        "trunc" => Some(f64::trunc),
        "fract" => Some(f64::fract),
        "to_degrees" => Some(f64::to_degrees),
        "to_radians" => Some(f64::to_radians),
        _ => None,
    }
}

/// Two-argument float methods by name (`powi` and `mul_add` are handled apart).
fn binary_method(name: &str) -> Option<fn(f64, f64) -> f64> {
    match name {
        "powf" => Some(f64::powf),
        "log" => Some(f64::log),
        "atan2" => Some(f64::atan2),
        "hypot" => Some(f64::hypot),
        "max" => Some(f64::max),
        "min" => Some(f64::min),
        "copysign" => Some(f64::copysign),
        _ => None,
    }
}

fn fit_i64(x: i128) -> Result<RtVal, String> {
    i64::try_from(x)
        .map(RtVal::I)
        .map_err(|_| format!("cast result {x} does not fit the interpreter's i64"))
}

/// `as` casts: float→int truncates and saturates (NaN → 0), int→int wraps to the target
/// width, bool→int is 0 or 1. Without a known integer type the target is i64.
pub(super) fn cast(v: RtVal, to: Ty, int: Option<crate::ir::IntTy>) -> Result<RtVal, String> {
    // The interpreter's integers are i64: a wider type is held to it.
    let range = int
        .map(|t| {
            let (lo, hi) = t.range();
            (lo.max(i64::MIN.into()), hi.min(u64::MAX.into()))
        })
        .unwrap_or((i64::MIN as i128, i64::MAX as i128));
    match (v, to) {
        (RtVal::I(x), Ty::Float) => Ok(RtVal::F(x as f64)),
        (RtVal::F(x), Ty::Float) => Ok(RtVal::F(x)),
        (RtVal::F(x), Ty::Int) => {
            let t = if x.is_nan() { 0.0 } else { x.trunc() };
            let clamped = if t <= range.0 as f64 {
                range.0
            } else if t >= range.1 as f64 {
                range.1
            } else {
                t as i128
            };
            fit_i64(clamped)
        }
        (RtVal::I(x), Ty::Int) => {
            let (lo, hi) = range;
            let width = hi - lo + 1;
            fit_i64((x as i128 - lo).rem_euclid(width) + lo)
        }
        (RtVal::B(b), Ty::Int) => Ok(RtVal::I(b as i64)),
        (RtVal::B(b), Ty::Bool) => Ok(RtVal::B(b)),
        (v, to) => Err(format!("cannot cast {v:?} to {to:?}")),
    }
}
