//! The interactions engine: sparse set functions and the indices computed from them.
//!
//! - [`function`]: sparse set functions in the Fourier or Möbius basis;
//! - [`indices`]: Möbius → interaction indices (SV, BV, SII, BII, k-SII, STII, FSII, FBII);
//! - [`exact`]: the same indices by enumeration (the oracle, small `n`);
//! - [`trees`]: LightGBM ensembles as exact sparse spectra;
//! - [`proxyspex`]: ProxySPEX planning, support selection and the top-term refit;
//! - [`ridge`]: the proxy-scaled ridge refit.

pub mod exact;
pub mod function;
pub mod indices;
pub mod proxyspex;
pub mod ridge;
pub mod trees;
