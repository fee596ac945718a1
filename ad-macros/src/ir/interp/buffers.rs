//! Buffer storage: parameter buffers in and out of `RtArg`s, element access with bounds
//! and mutability checks, allocation and whole-buffer moves.

use super::*;

/// A buffer's contents: rows of run-time scalars, so one representation serves floats,
/// integers and booleans.
#[derive(Clone, Debug)]
pub(super) enum Storage {
    R1(Vec<RtVal>),
    R2(Vec<Vec<RtVal>>),
}

impl Storage {
    pub(super) fn len(&self) -> usize {
        match self {
            Storage::R1(v) => v.len(),
            Storage::R2(v) => v.len(),
        }
    }
    pub(super) fn elements_mut(&mut self) -> Box<dyn Iterator<Item = &mut RtVal> + '_> {
        match self {
            Storage::R1(v) => Box::new(v.iter_mut()),
            Storage::R2(v) => Box::new(v.iter_mut().flatten()),
        }
    }
    pub(super) fn elements(&self) -> Box<dyn Iterator<Item = &RtVal> + '_> {
        match self {
            Storage::R1(v) => Box::new(v.iter()),
            Storage::R2(v) => Box::new(v.iter().flatten()),
        }
    }
    /// Row lengths (one entry for rank 1): two buffers of one shape have equal shapes.
    pub(super) fn shape(&self) -> Vec<usize> {
        match self {
            Storage::R1(v) => vec![v.len()],
            Storage::R2(v) => std::iter::once(v.len())
                .chain(v.iter().map(Vec::len))
                .collect(),
        }
    }
}

/// `buf2 (w)`: how errors name a buffer.
pub(super) fn buf_name(f: &Function, b: Buf) -> String {
    format!("{b} ({})", f.buf(b).name)
}

impl Machine<'_> {
    pub(super) fn storage_of_arg(&self, buf: Buf, a: &RtArg) -> Result<Storage, String> {
        let data = self.f.buf(buf);
        Ok(match (data.rank, data.elem, a) {
            (1, Ty::Float, RtArg::Buf(v)) => Storage::R1(v.iter().map(|&x| RtVal::F(x)).collect()),
            (1, Ty::Int, RtArg::IntBuf(v)) => Storage::R1(v.iter().map(|&x| RtVal::I(x)).collect()),
            (2, Ty::Float, RtArg::Buf2(v)) => Storage::R2(
                v.iter()
                    .map(|row| row.iter().map(|&x| RtVal::F(x)).collect())
                    .collect(),
            ),
            (rank, elem, a) => {
                return Err(format!(
                    "{} is rank {rank} of {elem:?}; the argument is {a:?}",
                    self.name(buf)
                ))
            }
        })
    }

    /// Copies every `&mut` parameter buffer back into its argument.
    pub(super) fn write_back(&self, args: &mut [RtArg]) -> Result<(), String> {
        for (n, p) in self.f.params.iter().enumerate() {
            let ParamKind::Buffer { buf, mutable: true } = p.kind else {
                continue;
            };
            let storage = self.storage(buf)?;
            let float = |v: &RtVal| {
                v.as_float()
                    .ok_or_else(|| format!("{} holds {v:?}", self.name(buf)))
            };
            args[n] = match (&args[n], storage) {
                (RtArg::Buf(_), Storage::R1(v)) => {
                    RtArg::Buf(v.iter().map(float).collect::<Result<_, _>>()?)
                }
                (RtArg::IntBuf(_), Storage::R1(v)) => RtArg::IntBuf(
                    v.iter()
                        .map(|x| {
                            x.as_int()
                                .ok_or_else(|| format!("{} holds {x:?}", self.name(buf)))
                        })
                        .collect::<Result<_, _>>()?,
                ),
                (RtArg::Buf2(_), Storage::R2(v)) => RtArg::Buf2(
                    v.iter()
                        .map(|row| row.iter().map(float).collect::<Result<_, _>>())
                        .collect::<Result<_, _>>()?,
                ),
                (a, _) => {
                    return Err(format!(
                        "{} no longer matches its argument {a:?}",
                        self.name(buf)
                    ))
                }
            };
        }
        Ok(())
    }

    pub(super) fn storage(&self, b: Buf) -> Result<&Storage, String> {
        self.bufs[b.index()]
            .as_ref()
            .ok_or_else(|| format!("{} is used before it is allocated", self.name(b)))
    }

    /// The storage of `b` for writing: parameter buffers are writable only when `&mut`.
    pub(super) fn storage_mut(&mut self, b: Buf) -> Result<&mut Storage, String> {
        let f = self.f;
        if let BufKind::Param(n) = f.buf(b).kind {
            if !matches!(f.params[n].kind, ParamKind::Buffer { mutable: true, .. }) {
                return Err(format!(
                    "{} is a read-only parameter and cannot be written",
                    buf_name(f, b)
                ));
            }
        }
        self.bufs[b.index()]
            .as_mut()
            .ok_or_else(|| format!("{} is used before it is allocated", buf_name(f, b)))
    }

    /// The indices `idx` as `usize`s (the first `len` of the array; ranks are at most 2).
    pub(super) fn index(
        &self,
        b: Buf,
        idx: &[Value],
        exact: bool,
    ) -> Result<([usize; 2], usize), String> {
        let rank = self.f.buf(b).rank as usize;
        if idx.len() > rank.min(2) || (exact && idx.len() != rank) {
            return Err(format!(
                "{} indices into {} of rank {rank}",
                idx.len(),
                self.name(b)
            ));
        }
        let mut out = [0; 2];
        for (slot, &v) in out.iter_mut().zip(idx) {
            let i = self.int(v)?;
            *slot = usize::try_from(i)
                .map_err(|_| format!("negative index {i} into {}", self.name(b)))?;
        }
        Ok((out, idx.len()))
    }

    pub(super) fn element(
        &mut self,
        b: Buf,
        idx: &[usize],
        write: bool,
    ) -> Result<&mut RtVal, String> {
        let f = self.f;
        let oob = |i: usize, len: usize| {
            format!(
                "index {i} out of bounds for {} of length {len}",
                buf_name(f, b)
            )
        };
        let storage = if write {
            self.storage_mut(b)?
        } else {
            self.bufs[b.index()]
                .as_mut()
                .ok_or_else(|| format!("{} is used before it is allocated", buf_name(f, b)))?
        };
        match (storage, idx) {
            (Storage::R1(v), [i]) => {
                let len = v.len();
                v.get_mut(*i).ok_or_else(|| oob(*i, len))
            }
            (Storage::R2(v), [i, j]) => {
                let len = v.len();
                let row = v.get_mut(*i).ok_or_else(|| oob(*i, len))?;
                let row_len = row.len();
                row.get_mut(*j).ok_or_else(|| {
                    format!(
                        "index [{i}][{j}] out of bounds for {}: row of length {row_len}",
                        buf_name(f, b)
                    )
                })
            }
            _ => Err(format!("{} indices into {}", idx.len(), buf_name(f, b))),
        }
    }

    pub(super) fn check_elem(&self, b: Buf, x: RtVal) -> Result<(), String> {
        let elem = self.f.buf(b).elem;
        if x.ty() != elem {
            return Err(format!("{} holds {elem:?}, not {x:?}", self.name(b)));
        }
        Ok(())
    }

    pub(super) fn alloc(
        &mut self,
        buf: Buf,
        dims: &[Value],
        init: &AllocInit,
    ) -> Result<(), String> {
        let data = self.f.buf(buf);
        if let BufKind::Param(_) = data.kind {
            return Err(format!(
                "{} is a parameter and cannot be reallocated",
                self.name(buf)
            ));
        }
        let storage = match init {
            AllocInit::Row { .. } => {
                return Err("the interpreter does not run call snapshots".into())
            }
            AllocInit::Fill(v) => {
                let x = self.get(*v)?;
                self.check_elem(buf, x)?;
                let dims = dims
                    .iter()
                    .map(|&d| {
                        let n = self.int(d)?;
                        usize::try_from(n)
                            .map_err(|_| format!("negative length {n} for {}", self.name(buf)))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if dims.iter().product::<usize>() > MAX_ELEMENTS {
                    return Err(format!("{} would hold {dims:?} elements", self.name(buf)));
                }
                match (data.rank, dims.as_slice()) {
                    (1, [n]) => Storage::R1(vec![x; *n]),
                    (2, [n, m]) => Storage::R2(vec![vec![x; *m]; *n]),
                    (rank, _) => {
                        return Err(format!(
                            "{} dims for {} of rank {rank}",
                            dims.len(),
                            self.name(buf)
                        ))
                    }
                }
            }
            AllocInit::Copy(src) => {
                let (s, d) = (self.f.buf(*src), data);
                if (s.rank, s.elem) != (d.rank, d.elem) {
                    return Err(format!(
                        "{} is a copy of {} of another rank or type",
                        self.name(buf),
                        self.name(*src)
                    ));
                }
                self.storage(*src)?.clone()
            }
        };
        self.bufs[buf.index()] = Some(storage);
        Ok(())
    }

    pub(super) fn swap(&mut self, a: Buf, b: Buf) -> Result<(), String> {
        let (da, db) = (self.f.buf(a), self.f.buf(b));
        if (da.rank, da.elem) != (db.rank, db.elem) {
            return Err(format!(
                "swap of {} and {} of another rank or type",
                self.name(a),
                self.name(b)
            ));
        }
        let sa = self.storage_mut(a)?.clone();
        let sb = self.storage_mut(b)?.clone();
        // A parameter is the caller's slice: swapping can exchange its contents, not its length.
        let is_param = |d: &BufData| matches!(d.kind, BufKind::Param(_));
        if (is_param(da) || is_param(db)) && sa.shape() != sb.shape() {
            return Err(format!(
                "swap of {} and {} of different shapes",
                self.name(a),
                self.name(b)
            ));
        }
        self.bufs[a.index()] = Some(sb);
        self.bufs[b.index()] = Some(sa);
        Ok(())
    }
}
