//! A `macro_rules!` that writes the `#[differentiate]` attribute around a function the user
//! passes in (the attribute's tokens carry the macro's hygiene, the parameters the user's)
//! compiles: the generated bodies use each parameter with its span in the signature.
use phidiff::differentiate;

macro_rules! differentiated {
    ($($item:item)*) => {
        $(
            #[differentiate(forward, reverse)]
            $item
        )*
    };
}

differentiated! {
    pub fn scaled_dot(x: &[f64], a: f64) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            s += 2.0 * a * x[i] * x[i];
        }
        s
    }
}

/// Parameter types passed as `$t:ty` arrive wrapped in an invisible group; they are still
/// read as a float, an integer and a slice.
macro_rules! typed {
    ($name:ident, $float:ty, $int:ty, $slice:ty) => {
        #[differentiate(reverse)]
        pub fn $name(x: $slice, a: $float, k: $int) -> $float {
            let mut s = 0.0;
            for i in 0..k {
                s += a * x[i];
            }
            s
        }
    };
}

typed!(weighted, f64, usize, &[f64]);

fn main() {
    let (v, (dx, da)) = weighted_grad(&[1.0, 2.0, 3.0], 2.0, 2);
    assert_eq!((v, dx, da), (6.0, vec![2.0, 2.0, 0.0], 3.0));
    let x = [1.0, 2.0];
    let (v, (dx, da)) = scaled_dot_grad(&x, 0.5);
    assert_eq!(v, 5.0);
    assert_eq!(dx, vec![2.0, 4.0]);
    assert_eq!(da, 10.0);
    let (v, t) = scaled_dot_fwd(&x, &[1.0, 0.0], 1.0, 0.0);
    assert_eq!((v, t), (10.0, 4.0));
}
