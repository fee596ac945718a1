use phidiff::differentiate;

#[differentiate(forward, reverse)]
fn f(n: usize, out: &mut [usize]) {
    out[0] = n + 1;
}

fn main() {}
