use phidiff::{differentiate, Differentiable};

#[derive(Differentiable, Clone)]
pub struct Chain {
    pub k: f64,
}

// Methods without attributes are inlined where they are called; a cycle cannot be.
impl Chain {
    fn ping(&self, v: f64) -> f64 {
        self.k * self.pong(v - 1.0)
    }

    fn pong(&self, v: f64) -> f64 {
        v + self.ping(v)
    }
}

#[differentiate(forward, reverse)]
fn f(c: &Chain, x: f64) -> f64 {
    c.ping(x)
}

fn main() {}
