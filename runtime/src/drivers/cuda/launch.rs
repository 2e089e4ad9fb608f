//! Launch geometry: an OpenCL NDRange (global and optional local size per
//! dimension) as a CUDA grid of blocks.
//!
//! OpenCL's global size counts work-items, CUDA's grid counts blocks, so
//! the grid is global / local in each dimension, and the global size must
//! be a multiple of the local size (tcc's kernels compute their indices
//! from `get_global_id` and rely on the exact global size: no rounding up).
//! When the artifact leaves the local size to the runtime, the block is
//! chosen to divide the global size exactly: the largest divisor of the
//! first dimension up to 256 work-items, then of the next dimensions
//! within what is left of the 256.

use crate::error::{Error, Result};

/// Work-items per block when the runtime chooses the block.
pub(crate) const CHOSEN_BLOCK_ITEMS: u64 = 256;

/// CUDA's limits on a block (per dimension, and in all) and on a grid.
const MAX_BLOCK: [u64; 3] = [1024, 1024, 64];
const MAX_BLOCK_ITEMS: u64 = 1024;
const MAX_GRID: [u64; 3] = [(1 << 31) - 1, 65535, 65535];

/// A launch's grid (in blocks) and block (in work-items), x, y, z.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
}

/// The grid and block of kernel `name`'s launch over `global` work-items
/// with work-groups of `local` (`None`: the runtime chooses); `Ok(None)`
/// for an empty NDRange (a 0 in `global`), which launches nothing.
pub(crate) fn geometry(
    name: &str,
    global: &[u64],
    local: Option<&[u64]>,
) -> Result<Option<Geometry>> {
    if global.is_empty() || global.len() > 3 {
        return Err(Error::InvalidInput(format!(
            "kernel `{name}`: dims must be 1, 2 or 3, got {}",
            global.len()
        )));
    }
    if global.contains(&0) {
        return Ok(None);
    }
    let block: Vec<u64> = match local {
        Some(local) => {
            if local.len() != global.len() {
                return Err(Error::InvalidInput(format!(
                    "kernel `{name}`: {} local sizes for {} dimensions",
                    local.len(),
                    global.len()
                )));
            }
            for (d, (&g, &l)) in global.iter().zip(local).enumerate() {
                if l == 0 || g % l != 0 {
                    return Err(Error::InvalidInput(format!(
                        "kernel `{name}`: global size {g} is not a multiple of local size {l} in dimension {d} (global {global:?}, local {local:?})"
                    )));
                }
            }
            local.to_vec()
        }
        None => chosen_block(global),
    };
    let items: u64 = block.iter().product();
    if items > MAX_BLOCK_ITEMS || block.iter().zip(MAX_BLOCK).any(|(&b, max)| b > max) {
        return Err(Error::InvalidInput(format!(
            "kernel `{name}`: work-group {block:?} exceeds CUDA's block limits ({MAX_BLOCK:?}, {MAX_BLOCK_ITEMS} in all)"
        )));
    }
    let mut geometry = Geometry {
        grid: [1; 3],
        block: [1; 3],
    };
    for d in 0..global.len() {
        let blocks = global[d] / block[d];
        if blocks > MAX_GRID[d] {
            return Err(Error::InvalidInput(format!(
                "kernel `{name}`: {blocks} work-groups in dimension {d} exceed CUDA's grid limit {} (global {global:?}, local {block:?})",
                MAX_GRID[d]
            )));
        }
        // Both fit: checked against the limits above.
        geometry.grid[d] = blocks as u32;
        geometry.block[d] = block[d] as u32;
    }
    Ok(Some(geometry))
}

/// A block that divides `global` (all non-zero) exactly, of at most
/// [`CHOSEN_BLOCK_ITEMS`] work-items: the largest divisor of each
/// dimension in turn within what the earlier ones left (z at most 64).
fn chosen_block(global: &[u64]) -> Vec<u64> {
    let mut left = CHOSEN_BLOCK_ITEMS;
    global
        .iter()
        .zip(MAX_BLOCK)
        .map(|(&g, max)| {
            let b = largest_divisor_at_most(g, left.min(max));
            left /= b;
            b
        })
        .collect()
}

/// The largest divisor of `n` (> 0) that is at most `limit` (>= 1).
fn largest_divisor_at_most(n: u64, limit: u64) -> u64 {
    (1..=limit.min(n))
        .rev()
        .find(|&d| n.is_multiple_of(d))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(global: &[u64], local: Option<&[u64]>) -> Geometry {
        geometry("k", global, local).unwrap().unwrap()
    }

    #[test]
    fn given_local_sizes_divide_the_global_size() {
        assert_eq!(
            geo(&[4096, 32], Some(&[256, 1])),
            Geometry {
                grid: [16, 32, 1],
                block: [256, 1, 1]
            }
        );
        assert_eq!(
            geo(&[64, 64, 2], Some(&[16, 16, 1])),
            Geometry {
                grid: [4, 4, 2],
                block: [16, 16, 1]
            }
        );
    }

    #[test]
    fn a_non_multiple_global_size_is_an_error() {
        let e = geometry("gemm", &[1000], Some(&[256]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "kernel `gemm`: global size 1000 is not a multiple of local size 256 in dimension 0"
            ),
            "{e}"
        );
        let e = geometry("gemm", &[64, 64], Some(&[64, 0]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("local size 0 in dimension 1"), "{e}");
        let e = geometry("gemm", &[2048], Some(&[2048]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("exceeds CUDA's block limits"), "{e}");
        assert!(geometry("gemm", &[], None).is_err());
        assert!(geometry("gemm", &[1, 1, 1, 1], None).is_err());
        let e = geometry("g", &[1 << 20, 1 << 20], Some(&[1, 1]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("exceed CUDA's grid limit 65535"), "{e}");
    }

    #[test]
    fn the_chosen_block_divides_the_global_size() {
        // Largest divisor up to 256.
        assert_eq!(geo(&[1000], None).block, [250, 1, 1]);
        assert_eq!(geo(&[1000], None).grid, [4, 1, 1]);
        assert_eq!(geo(&[4096], None).block, [256, 1, 1]);
        // A prime: single work-item blocks rather than a rounded grid.
        assert_eq!(geo(&[7919], None).block, [1, 1, 1]);
        assert_eq!(geo(&[7919], None).grid, [7919, 1, 1]);
        // Small first dimensions leave room for the next ones.
        assert_eq!(geo(&[4, 100, 3], None).block, [4, 50, 1]);
        assert_eq!(geo(&[3, 5, 64], None).block, [3, 5, 16]);
        for global in [[6u64, 10, 14], [255, 3, 1], [1, 1, 128]] {
            let g = geo(&global, None);
            let items: u32 = g.block.iter().product();
            assert!(items as u64 <= CHOSEN_BLOCK_ITEMS, "{g:?}");
            for (d, &items) in global.iter().enumerate() {
                assert_eq!(g.grid[d] as u64 * g.block[d] as u64, items, "{g:?}");
            }
        }
    }

    #[test]
    fn an_empty_range_launches_nothing() {
        assert_eq!(geometry("k", &[0], None).unwrap(), None);
        assert_eq!(geometry("k", &[16, 0], Some(&[16, 1])).unwrap(), None);
    }
}
