//! Activity analysis: a float value or buffer is active when it is *varied* (depends on an
//! active input) and *useful* (influences the returned value or an active `&mut` output).
//! Only active values get tangents and adjoints. Buffers are treated flow-insensitively
//! (one fact per buffer), values per SSA definition; both are solved to a fixed point.

use crate::ir::*;
use std::collections::BTreeSet;

pub struct Activity {
    values: Vec<bool>,
    bufs: Vec<bool>,
    /// Buffer parameters left out of the active set (`wrt`) that nevertheless carry values
    /// depending on the active inputs: written from them and read back.
    pub carriers: Vec<usize>,
}

impl Activity {
    pub fn value(&self, v: Value) -> bool {
        self.values[v.index()]
    }
    pub fn buf(&self, b: Buf) -> bool {
        self.bufs[b.index()]
    }
}

/// `active_params[n]`: whether parameter `n` of `f` is active (from the signature).
pub fn analyze(f: &Function, active_params: &[bool]) -> Activity {
    let varied = solve(f, active_params, Direction::Varied);
    let useful = solve(f, active_params, Direction::Useful);
    let mut values: Vec<bool> = (0..f.values.len())
        .map(|k| varied.values[k] && useful.values[k])
        .collect();
    for (k, v) in f.values.iter().enumerate() {
        if v.ty != Ty::Float {
            values[k] = false;
        }
    }
    let mut bufs: Vec<bool> = (0..f.bufs.len())
        .map(|k| varied.bufs[k] && useful.bufs[k])
        .collect();
    let mut carriers = Vec::new();
    for (k, b) in f.bufs.iter().enumerate() {
        if b.elem != Ty::Float {
            bufs[k] = false;
        }
        if let BufKind::Param(n) = b.kind {
            // The contract gives every active buffer parameter a shadow; an inactive one
            // has none, so one that carries active values cannot be differentiated.
            if !active_params[n] && bufs[k] && b.elem == Ty::Float {
                carriers.push(n);
            }
            bufs[k] = active_params[n] && b.elem == Ty::Float;
        }
    }
    // Swapped buffers exchange shadows, so they share one activity.
    let mut changed = true;
    while changed {
        changed = false;
        f.walk(f.body, &mut |i| {
            if let InstKind::Swap(a, b) = f.inst(i).kind {
                let any = bufs[a.index()] || bufs[b.index()];
                if bufs[a.index()] != any || bufs[b.index()] != any {
                    bufs[a.index()] = any;
                    bufs[b.index()] = any;
                    changed = true;
                }
            }
        });
    }
    Activity {
        values,
        bufs,
        carriers,
    }
}

#[derive(Copy, Clone, PartialEq)]
enum Direction {
    Varied,
    Useful,
}

struct Facts {
    values: Vec<bool>,
    bufs: Vec<bool>,
    /// Opaque values that carry data between calls (`comm` in `comm.isend(&a, ..)` and
    /// `comm.wait_recv(&mut b, ..)`), marked once a call puts varied data into them
    /// (varied) or takes useful data out of them (useful).
    channels: BTreeSet<String>,
    /// The opaque values that can be channels at all (see [`channels`]).
    capable: BTreeSet<String>,
    changed: bool,
}

impl Facts {
    fn mark(&mut self, v: Value) {
        if !self.values[v.index()] {
            self.values[v.index()] = true;
            self.changed = true;
        }
    }
    fn mark_buf(&mut self, b: Buf) {
        if !self.bufs[b.index()] {
            self.bufs[b.index()] = true;
            self.changed = true;
        }
    }
    fn mark_channel(&mut self, c: &str) {
        if self.channels.insert(c.to_string()) {
            self.changed = true;
        }
    }
    fn v(&self, v: Value) -> bool {
        self.values[v.index()]
    }
    fn b(&self, b: Buf) -> bool {
        self.bufs[b.index()]
    }
}

/// The opaque values a call gets (its receiver and opaque arguments), by their keys; paths
/// (`Op::Sum`) are constants, not variables that carry data.
fn opaque_values(callee: &Callee, args: &[CallArg]) -> Vec<String> {
    callee
        .receiver
        .iter()
        .chain(args.iter().filter_map(|a| match a {
            CallArg::Opaque(o) => Some(o),
            _ => None,
        }))
        .filter_map(|o| o.key.clone())
        .collect()
}

/// The opaque values that can carry floats from one call to another. A call that gets an
/// opaque value (as receiver or argument) is a *sink* when it takes floats and gives none
/// (`comm.isend(&a, ..)`), a *source* when it gives floats and takes none
/// (`comm.wait_recv(&mut b, ..)`), *mixed* when it does both (`comm.sendrecv(..)`,
/// `model(cfg, x)`). A value is a channel when
/// - some sink gets it and some other call gives floats out of it: what a sink takes has
///   no visible effect but through the value; or
/// - it is the receiver of a source and of a mixed call (a receive of what a blocking
///   exchange sent).
///
/// A configuration passed as an argument to `model(cfg, x)` and `fill(cfg, &mut buf)` is
/// none of these, so its calls do not become active through it.
fn channels(f: &Function) -> BTreeSet<String> {
    let (mut sinks, mut float_out, mut source_recv, mut mixed_recv) = (
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
    );
    f.walk(f.body, &mut |i| {
        let InstKind::Call { callee, args, .. } = &f.inst(i).kind else {
            return;
        };
        let gives_in = args.iter().any(|a| match a {
            CallArg::Scalar(v) => f.ty(*v) == Ty::Float,
            CallArg::Buf {
                buf,
                mutable: false,
                ..
            } => f.buf(*buf).elem == Ty::Float,
            _ => false,
        });
        let gives_out = f.inst(i).results.iter().any(|r| f.ty(*r) == Ty::Float)
            || args.iter().any(|a| {
                matches!(a, CallArg::Buf { buf, mutable: true, .. } if f.buf(*buf).elem == Ty::Float)
            });
        let values = opaque_values(callee, args);
        let receiver = callee.receiver.as_ref().and_then(|r| r.key.clone());
        if gives_in && !gives_out {
            sinks.extend(values.iter().cloned());
        }
        if gives_out {
            float_out.extend(values.iter().cloned());
        }
        if let Some(r) = receiver {
            if gives_out && !gives_in {
                source_recv.insert(r.clone());
            }
            if gives_out && gives_in {
                mixed_recv.insert(r);
            }
        }
    });
    let by_sink = sinks.intersection(&float_out).cloned();
    let by_receiver = source_recv.intersection(&mixed_recv).cloned();
    by_sink.chain(by_receiver).collect()
}

fn solve(f: &Function, active_params: &[bool], dir: Direction) -> Facts {
    let mut facts = Facts {
        values: vec![false; f.values.len()],
        bufs: vec![false; f.bufs.len()],
        channels: Default::default(),
        capable: channels(f),
        changed: true,
    };
    // Seeds.
    for (k, b) in f.bufs.iter().enumerate() {
        if let BufKind::Param(n) = b.kind {
            let mutable = matches!(f.params[n].kind, ParamKind::Buffer { mutable: true, .. });
            if active_params[n] && (dir == Direction::Varied || mutable) {
                facts.bufs[k] = true;
            }
        }
    }
    if dir == Direction::Useful {
        for &y in &f.block(f.body).yields {
            facts.values[y.index()] = true;
        }
    }
    while facts.changed {
        facts.changed = false;
        f.walk(f.body, &mut |i| {
            transfer(f, i, active_params, dir, &mut facts)
        });
    }
    facts
}

fn transfer(f: &Function, i: Inst, active_params: &[bool], dir: Direction, facts: &mut Facts) {
    use InstKind::*;
    let data = f.inst(i);
    let res = &data.results;
    let varied = dir == Direction::Varied;
    // `a → b`: information flows from a to b; varied follows it, useful goes against it.
    macro_rules! flow {
        ($from:expr, $to:expr) => {{
            let (from, to): (Value, Value) = ($from, $to);
            if varied && facts.v(from) {
                facts.mark(to);
            } else if !varied && facts.v(to) {
                facts.mark(from);
            }
        }};
    }
    macro_rules! flow_buf_to_value {
        ($buf:expr, $v:expr) => {{
            if varied && facts.b($buf) {
                facts.mark($v);
            } else if !varied && facts.v($v) {
                facts.mark_buf($buf);
            }
        }};
    }
    macro_rules! flow_value_to_buf {
        ($v:expr, $buf:expr) => {{
            if varied && facts.v($v) {
                facts.mark_buf($buf);
            } else if !varied && facts.b($buf) {
                facts.mark($v);
            }
        }};
    }
    macro_rules! flow_buf {
        ($from:expr, $to:expr) => {{
            if varied && facts.b($from) {
                facts.mark_buf($to);
            } else if !varied && facts.b($to) {
                facts.mark_buf($from);
            }
        }};
    }
    match &data.kind {
        Param(n) => {
            if varied && active_params[*n] {
                facts.mark(res[0]);
            }
        }
        Unary(_, a) => flow!(*a, res[0]),
        Binary(op, a, b) => {
            if !op.is_comparison() {
                flow!(*a, res[0]);
                flow!(*b, res[0]);
            }
        }
        Math(_, args) => args.iter().for_each(|a| flow!(*a, res[0])),
        Cast { value, .. } => flow!(*value, res[0]),
        Load(buf, _) => flow_buf_to_value!(*buf, res[0]),
        Store(buf, _, v) | StoreAdd(buf, _, v) => flow_value_to_buf!(*v, *buf),
        Alloc { buf, init, .. } => match init {
            AllocInit::Fill(v) => flow_value_to_buf!(*v, *buf),
            AllocInit::Copy(src) | AllocInit::Row { tape: src, .. } => flow_buf!(*src, *buf),
        },
        CopyFrom { dst, src } => flow_buf!(*src, *dst),
        Swap(a, b) => {
            flow_buf!(*a, *b);
            flow_buf!(*b, *a);
        }
        If {
            then_blk, else_blk, ..
        } => {
            for blk in [then_blk, else_blk] {
                for (y, r) in f.block(*blk).yields.iter().zip(res) {
                    flow!(*y, *r);
                }
            }
        }
        For {
            params,
            inits,
            body,
            ..
        }
        | While {
            params,
            inits,
            body,
            ..
        } => {
            let nexts = &f.block(*body).yields;
            for k in 0..params.len() {
                flow!(inits[k], params[k]);
                flow!(nexts[k], params[k]);
                flow!(params[k], res[k]);
            }
        }
        Call { args, callee, .. } => {
            // Conservative: everything the call reads may reach everything it writes. A
            // call also reads and writes the opaque values it gets (its receiver and
            // opaque arguments, such as a communicator): data put into them by one call
            // may come out of another (`comm.isend(&a, ..)` ... `comm.wait_recv(&mut b,
            // ..)`), so such values (see [`channels`]) link all the calls that get them.
            let ins: Vec<CallArg> = args.clone();
            let channels: Vec<String> = opaque_values(callee, &ins)
                .into_iter()
                .filter(|c| facts.capable.contains(c))
                .collect();
            let through_channel = channels.iter().any(|c| facts.channels.contains(c));
            let mut any_in = ins.iter().any(|a| match a {
                CallArg::Scalar(v) => facts.v(*v),
                CallArg::Buf { buf, .. } => facts.b(*buf),
                CallArg::Opaque(_) => false,
            });
            let mut any_out = res.first().is_some_and(|r| facts.v(*r))
                || ins
                    .iter()
                    .any(|a| matches!(a, CallArg::Buf { buf, mutable: true, .. } if facts.b(*buf)));
            if varied && any_in || !varied && any_out {
                channels.iter().for_each(|c| facts.mark_channel(c));
            }
            if varied {
                any_in |= through_channel;
            } else {
                any_out |= through_channel;
            }
            if varied && any_in {
                res.iter().for_each(|r| facts.mark(*r));
                for a in &ins {
                    if let CallArg::Buf {
                        buf, mutable: true, ..
                    } = a
                    {
                        facts.mark_buf(*buf);
                    }
                }
            }
            if !varied && any_out {
                for a in &ins {
                    match a {
                        CallArg::Scalar(v) => facts.mark(*v),
                        CallArg::Buf { buf, .. } => facts.mark_buf(*buf),
                        CallArg::Opaque(_) => {}
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::channels;

    fn channels_of(item: syn::ItemFn) -> Vec<String> {
        let compiled = crate::expand::compile_with_for_tests("reverse", &item).expect("compiles");
        channels(&compiled.primal).into_iter().collect()
    }

    #[test]
    fn which_opaque_values_are_channels() {
        // A sink (isend) and a source (wait_recv).
        let nonblocking: syn::ItemFn = syn::parse_quote! {
            fn f(comm: &Comm, x: &[f64]) -> f64 {
                let mut b = vec![0.0; 1];
                comm.isend(x, 1, 0);
                comm.wait_recv(&mut b, 1, 0);
                b[0]
            }
        };
        assert_eq!(channels_of(nonblocking), ["comm"]);
        // A sink and a mixed call (an exchange that receives what the isend sent).
        let mixed: syn::ItemFn = syn::parse_quote! {
            fn f(comm: &Comm, x: &[f64], c: &[f64]) -> f64 {
                let mut b = vec![0.0; 1];
                comm.isend(x, 1, 0);
                comm.sendrecv(c, 1, &mut b, 1, 0);
                b[0]
            }
        };
        assert_eq!(channels_of(mixed), ["comm"]);
        // The receiver of a source and of a mixed call (a receive of what an exchange sent).
        let receive_after_exchange: syn::ItemFn = syn::parse_quote! {
            fn f(comm: &Comm, x: &[f64]) -> f64 {
                let mut b = vec![0.0; 1];
                let mut c = vec![0.0; 1];
                comm.sendrecv(x, 1, &mut c, 1, 0);
                comm.wait_recv(&mut b, 1, 0);
                b[0] + c[0]
            }
        };
        assert_eq!(channels_of(receive_after_exchange), ["comm"]);
        // A configuration passed to a mixed call and a source: not a channel.
        let config: syn::ItemFn = syn::parse_quote! {
            fn f(cfg: &Config, x: &[f64]) -> f64 {
                let mut buf = vec![0.0; 2];
                fill(cfg, &mut buf);
                model(cfg, x) * buf[1]
            }
        };
        assert!(channels_of(config).is_empty());
    }
}
