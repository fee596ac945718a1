//! Physical constants, as a crate keeps them in a module of their own: the numeric tests
//! import them (`use crate::common::physics::..`) to check that a differentiated function
//! reads constants of another file.

/// Standard gravity, m/s².
pub const STANDARD_GRAVITY: f64 = 9.806_65;

/// Density of air at sea level, kg/m³.
pub const AIR_DENSITY: f64 = 1.225;

/// Drag coefficients of a sphere, a cube, a cylinder and a streamlined body.
pub const DRAG: [f64; 4] = [0.47, 1.05, 0.82, 0.04];
