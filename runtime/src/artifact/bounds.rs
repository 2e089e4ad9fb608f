//! Where a loaded artifact's memory is: the `PT_LOAD` segments the dynamic
//! loader mapped for it (from `dl_iterate_phdr`, the loader's own record,
//! not the file). The table reader checks that every array, string and
//! entry point the table names lies inside one of them, so a patched count
//! or pointer (`num_functions = 0xffff`) is an error, not a read past the
//! library's pages.

use std::ops::Range;

/// The mapped segments of one loaded object.
#[derive(Clone, Debug, Default)]
pub(crate) struct Segments {
    /// Readable segments, and whether each is executable.
    ranges: Vec<(Range<usize>, bool)>,
}

impl Segments {
    /// The segments of the loaded object that holds `address`, or `None`
    /// when no loaded object does.
    pub(crate) fn containing(address: usize) -> Option<Segments> {
        struct Search {
            address: usize,
            found: Option<Segments>,
        }
        unsafe extern "C" fn visit(
            info: *mut libc::dl_phdr_info,
            _size: libc::size_t,
            data: *mut libc::c_void,
        ) -> libc::c_int {
            // SAFETY: called by dl_iterate_phdr with a valid info, and the
            // `Search` passed below.
            let (info, search) = unsafe { (&*info, &mut *(data as *mut Search)) };
            if info.dlpi_phdr.is_null() {
                return 0;
            }
            // SAFETY: the loader's program headers of this object.
            let headers =
                unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
            let base = info.dlpi_addr as usize;
            let ranges: Vec<(Range<usize>, bool)> = headers
                .iter()
                .filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_R != 0)
                .filter_map(|h| {
                    let start = base.checked_add(h.p_vaddr as usize)?;
                    let end = start.checked_add(h.p_memsz as usize)?;
                    Some((start..end, h.p_flags & libc::PF_X != 0))
                })
                .collect();
            if ranges.iter().any(|(r, _)| r.contains(&search.address)) {
                search.found = Some(Segments { ranges });
                return 1;
            }
            0
        }
        let mut search = Search {
            address,
            found: None,
        };
        // SAFETY: `visit` only reads what the loader hands it.
        unsafe { libc::dl_iterate_phdr(Some(visit), &mut search as *mut Search as *mut _) };
        search.found
    }

    /// Whether `len` bytes at `address` lie inside one readable segment.
    pub(crate) fn holds(&self, address: usize, len: usize) -> bool {
        let Some(end) = address.checked_add(len) else {
            return false;
        };
        self.ranges
            .iter()
            .any(|(r, _)| r.start <= address && end <= r.end)
    }

    /// The bytes from `address` to the end of its segment, if any.
    pub(crate) fn rest(&self, address: usize) -> Option<usize> {
        self.ranges
            .iter()
            .find(|(r, _)| r.contains(&address))
            .map(|(r, _)| r.end - address)
    }

    /// Whether `address` is in an executable segment.
    pub(crate) fn executable(&self, address: usize) -> bool {
        self.ranges.iter().any(|(r, x)| *x && r.contains(&address))
    }
}
