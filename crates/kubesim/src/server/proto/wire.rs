//! The protobuf wire format as the decoder reads it: varints, length-delimited records,
//! skipping unknown fields, and the `runtime.Unknown` envelope around every object.

use super::ProtoError;

/// Protobuf wire types.
pub(super) const VARINT: u8 = 0;
pub(super) const FIXED64: u8 = 1;
pub(super) const LEN: u8 = 2;
pub(super) const START_GROUP: u8 = 3;
pub(super) const END_GROUP: u8 = 4;
pub(super) const FIXED32: u8 = 5;

/// A cursor over protobuf bytes, with the checks of the Go generated unmarshallers.
pub(super) struct Reader<'a> {
    pub(super) buf: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(super) fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(super) fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            if shift >= 64 {
                return Err(ProtoError::IntOverflow);
            }
            let b = *self.buf.get(self.pos).ok_or(ProtoError::UnexpectedEof)?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        let end = self.pos.checked_add(n).ok_or(ProtoError::UnexpectedEof)?;
        let out = self.buf.get(self.pos..end).ok_or(ProtoError::UnexpectedEof)?;
        self.pos = end;
        Ok(out)
    }

    pub(super) fn bytes(&mut self) -> Result<&'a [u8], ProtoError> {
        let len = self.varint()?;
        if i64::try_from(len).is_err() {
            return Err(ProtoError::NegativeLength);
        }
        self.take(usize::try_from(len).map_err(|_| ProtoError::UnexpectedEof)?)
    }

    /// Read a field tag as `(number, wire type)`; `message` names errors.
    pub(super) fn tag(&mut self, message: &str) -> Result<(u32, u8), ProtoError> {
        let key = self.varint()?;
        let wire = (key & 7) as u8;
        // Go reads the number as int32(key >> 3).
        let num = (key >> 3) as u32 as i32;
        let short = message.rsplit('.').next().unwrap_or(message);
        if wire == END_GROUP {
            return Err(ProtoError::EndGroup(short.to_string()));
        }
        if num <= 0 {
            return Err(ProtoError::IllegalTag { message: short.to_string(), tag: i64::from(num), wire });
        }
        Ok((num as u32, wire))
    }

    /// Skip the value of an unknown field (groups included).
    pub(super) fn skip(&mut self, wire: u8) -> Result<(), ProtoError> {
        let mut depth = 0u32;
        let mut wire = wire;
        loop {
            match wire {
                VARINT => {
                    self.varint()?;
                }
                FIXED64 => {
                    self.take(8)?;
                }
                LEN => {
                    self.bytes()?;
                }
                START_GROUP => depth += 1,
                // `tag` rejects END_GROUP at depth 0, so this only closes an open group.
                END_GROUP => depth = depth.saturating_sub(1),
                FIXED32 => {
                    self.take(4)?;
                }
                other => return Err(ProtoError::IllegalWireType(other)),
            }
            if depth == 0 {
                return Ok(());
            }
            wire = (self.varint()? & 7) as u8;
        }
    }
}

/// The `runtime.Unknown` envelope.
pub(super) struct Unknown<'a> {
    pub(super) api_version: String,
    pub(super) kind: String,
    pub(super) raw: &'a [u8],
}

impl<'a> Unknown<'a> {
    pub(super) fn decode(data: &'a [u8]) -> Result<Self, ProtoError> {
        let mut out = Unknown { api_version: String::new(), kind: String::new(), raw: &[] };
        let mut r = Reader::new(data);
        while !r.done() {
            match r.tag("Unknown")? {
                (1, LEN) => {
                    let mut tm = Reader::new(r.bytes()?);
                    while !tm.done() {
                        match tm.tag("TypeMeta")? {
                            (1, LEN) => out.api_version = go_string(tm.bytes()?),
                            (2, LEN) => out.kind = go_string(tm.bytes()?),
                            (1 | 2, wire) => return Err(wrong_wire("typeMeta", wire)),
                            (_, wire) => tm.skip(wire)?,
                        }
                    }
                }
                (2, LEN) => out.raw = r.bytes()?,
                // contentEncoding / contentType: not used by the apiserver's decoder.
                (3 | 4, LEN) => {
                    r.bytes()?;
                }
                (1..=4, wire) => return Err(wrong_wire("raw", wire)),
                (_, wire) => r.skip(wire)?,
            }
        }
        Ok(out)
    }
}

pub(super) fn wrong_wire(field: &str, wire: u8) -> ProtoError {
    ProtoError::WrongWireType { field: field.to_string(), wire }
}

/// Bytes to a string the way Go's JSON encoder prints a Go string: each byte of an invalid
/// UTF-8 sequence becomes U+FFFD.
pub(super) fn go_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (valid, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let n = e.error_len().unwrap_or(bad.len());
                out.extend(std::iter::repeat_n('\u{fffd}', n));
                rest = &bad[n..];
            }
        }
    }
}
