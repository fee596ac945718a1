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

fn main() {
    let x = [1.0, 2.0];
    let (v, (dx, da)) = scaled_dot_grad(&x, 0.5);
    assert_eq!(v, 5.0);
    assert_eq!(dx, vec![2.0, 4.0]);
    assert_eq!(da, 10.0);
    let (v, t) = scaled_dot_fwd(&x, &[1.0, 0.0], 1.0, 0.0);
    assert_eq!((v, t), (10.0, 4.0));
}
