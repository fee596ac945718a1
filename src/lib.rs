//! phidiff: automatic differentiation for Rust by source transformation.
pub use ad_core::*;
pub use ad_macros::differentiate;

#[doc(hidden)]
pub mod __private {
    pub use ad_core::__private::*;
    pub use ad_macros::differentiate_coarsen_off;
}
