// An enum's active variant changes with the inputs: it cannot derive `Differentiable`.
#[derive(phidiff::Differentiable)]
pub enum Shape {
    Circle(f64),
    Square(f64),
}

fn main() {}
