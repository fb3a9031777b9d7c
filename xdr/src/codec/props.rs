// SPDX-License-Identifier: GPL-2.0

//! v2 transport properties (draft -00 §5): `rpcrdma2_propset`, an array of
//! `rpcrdma2_propval { rdma_which; opaque rdma_data<>; }`.
//!
//! `rdma_data` holds the XDR encoding of the property's typedef. A
//! zero-length `rdma_data` means "the default value" for any property. For
//! the properties this draft defines, a decoder reports
//! [`ErrorKind::BadPropVal`] (to be answered with `RDMA2_ERR_BAD_XDR`,
//! §5.1) when `rdma_data` does not decode with the typedef: a `uint32`
//! property whose data is not exactly four bytes, or a Host Auth Message
//! whose inner `opaque<>` does not exactly fill `rdma_data`. Unknown
//! property ids are carried as [`Property::Unknown`] and never an error.

use super::error::{Error, ErrorKind, Item, Result};
use super::stream::{xdr_roundup, XdrReader, XdrWriter};

/// `RDMA2_PROPID_SBSIZ`: Maximum Send Size.
pub const PROPID_SBSIZ: u32 = 1;
/// `RDMA2_PROPID_RBSIZ`: Receive Buffer Size.
pub const PROPID_RBSIZ: u32 = 2;
/// `RDMA2_PROPID_RSSIZ`: Maximum RDMA Segment Size.
pub const PROPID_RSSIZ: u32 = 3;
/// `RDMA2_PROPID_RCSIZ`: Maximum RDMA Segment Count.
pub const PROPID_RCSIZ: u32 = 4;
/// `RDMA2_PROPID_BRS`: Reverse Request Support.
pub const PROPID_BRS: u32 = 5;
/// `RDMA2_PROPID_HOSTAUTH`: Host Auth Message.
pub const PROPID_HOSTAUTH: u32 = 6;

/// `RDMA_RVREQSUP_NONE`.
pub const RVREQSUP_NONE: u32 = 0;
/// `RDMA_RVREQSUP_INLINE`.
pub const RVREQSUP_INLINE: u32 = 1;
/// `RDMA_RVREQSUP_GENL`.
pub const RVREQSUP_GENL: u32 = 2;

/// One transport property (`rpcrdma2_propval`), interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Property<'a> {
    /// `SBSIZ`: largest Send payload the sender will transmit.
    MaxSendSize(u32),
    /// `RBSIZ`: size of the sender's posted Receive buffers.
    RecvBufSize(u32),
    /// `RSSIZ`: largest RDMA segment the sender handles.
    MaxSegmentSize(u32),
    /// `RCSIZ`: most RDMA segments in a requester's header.
    MaxSegmentCount(u32),
    /// `BRS`: reverse-direction support level (`RVREQSUP_*`).
    ReverseRequestSupport(u32),
    /// `HOSTAUTH`: host authentication material (the bytes of the inner
    /// `opaque<>`).
    HostAuth(&'a [u8]),
    /// Any property sent with zero-length `rdma_data`: use its default.
    Default(u32),
    /// A property id draft -00 does not define, with its raw data (never
    /// empty: empty data decodes as [`Property::Default`]).
    Unknown {
        /// `rdma_which`.
        id: u32,
        /// `rdma_data`.
        data: &'a [u8],
    },
}

const fn is_known(id: u32) -> bool {
    id >= PROPID_SBSIZ && id <= PROPID_HOSTAUTH
}

impl<'a> Property<'a> {
    /// `rdma_which`.
    pub const fn id(&self) -> u32 {
        match *self {
            Self::MaxSendSize(_) => PROPID_SBSIZ,
            Self::RecvBufSize(_) => PROPID_RBSIZ,
            Self::MaxSegmentSize(_) => PROPID_RSSIZ,
            Self::MaxSegmentCount(_) => PROPID_RCSIZ,
            Self::ReverseRequestSupport(_) => PROPID_BRS,
            Self::HostAuth(_) => PROPID_HOSTAUTH,
            Self::Default(id) | Self::Unknown { id, .. } => id,
        }
    }

    const fn u32_value(&self) -> Option<u32> {
        match *self {
            Self::MaxSendSize(v)
            | Self::RecvBufSize(v)
            | Self::MaxSegmentSize(v)
            | Self::MaxSegmentCount(v)
            | Self::ReverseRequestSupport(v) => Some(v),
            _ => None,
        }
    }

    /// Interprets `rdma_data` of property `id`. `at` is the offset of the
    /// data in the message, for errors.
    pub fn interpret(id: u32, data: &'a [u8], at: usize) -> Result<Self> {
        if data.is_empty() {
            return Ok(Self::Default(id));
        }
        let bad = Error::new(ErrorKind::BadPropVal(id), Item::PropData, at);
        let word = || match data.first_chunk::<4>() {
            Some(b) if data.len() == 4 => Ok(u32::from_be_bytes(*b)),
            _ => Err(bad),
        };
        Ok(match id {
            PROPID_SBSIZ => Self::MaxSendSize(word()?),
            PROPID_RBSIZ => Self::RecvBufSize(word()?),
            PROPID_RSSIZ => Self::MaxSegmentSize(word()?),
            PROPID_RCSIZ => Self::MaxSegmentCount(word()?),
            PROPID_BRS => Self::ReverseRequestSupport(word()?),
            PROPID_HOSTAUTH => {
                let mut r = XdrReader::new(data);
                let inner = r.opaque_var(Item::PropData).map_err(|_| bad)?;
                r.finish(Item::PropData).map_err(|_| bad)?;
                Self::HostAuth(inner)
            }
            _ => Self::Unknown { id, data },
        })
    }

    /// Length of the encoded `rdma_data` (without its length word), or `None`
    /// if it does not fit in a `u32`.
    fn data_len(&self) -> Option<usize> {
        let n = match *self {
            Self::HostAuth(a) => xdr_roundup(a.len())?.checked_add(4)?,
            Self::Default(_) => 0,
            Self::Unknown { data, .. } => data.len(),
            _ => 4,
        };
        u32::try_from(n).ok().map(|_| n)
    }

    /// Encoded size of the whole `rpcrdma2_propval`.
    pub fn encoded_len(&self) -> Option<usize> {
        xdr_roundup(self.data_len()?)?.checked_add(8)
    }

    /// Encodes the `rpcrdma2_propval`. Rejects [`Property::Unknown`] with a
    /// known id or empty data (they would decode as something else).
    pub fn encode(&self, w: &mut XdrWriter<'_>) -> Result<()> {
        let unrep = Error::new(ErrorKind::Unrepresentable, Item::PropData, w.position());
        let data_len = self.data_len().ok_or(unrep)?;
        let total = xdr_roundup(data_len)
            .and_then(|l| l.checked_add(8))
            .ok_or(unrep)?;
        if let Self::Unknown { id, data } = *self {
            if is_known(id) || data.is_empty() {
                return Err(unrep);
            }
        }
        w.reserve(total)?;
        w.put_u32(self.id())?;
        if let Some(v) = self.u32_value() {
            w.put_u32(4)?;
            return w.put_u32(v);
        }
        match *self {
            Self::HostAuth(a) => {
                w.put_u32(u32::try_from(data_len).map_err(|_| unrep)?)?;
                w.put_opaque_var(a)
            }
            Self::Unknown { data, .. } => w.put_opaque_var(data),
            _ => w.put_u32(0),
        }
    }
}

/// A decoded `rpcrdma2_propset`: a validated view over its elements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PropSet<'a> {
    /// The encoded elements (without the count word).
    raw: &'a [u8],
    /// Offset of `raw` in the message, for errors.
    base: usize,
    count: usize,
}

impl<'a> PropSet<'a> {
    /// Decodes and validates a property set at the reader's position.
    pub fn decode(r: &mut XdrReader<'a>) -> Result<Self> {
        // Each propval is at least two words.
        let count = r.array_count(8, Item::PropCount)?;
        let base = r.position();
        for _ in 0..count {
            let id = r.u32(Item::PropId)?;
            let at = r.position();
            let data = r.opaque_var(Item::PropData)?;
            Property::interpret(id, data, at.saturating_add(4))?;
        }
        let raw = r
            .buffer()
            .get(base..r.position())
            .ok_or(r.error(ErrorKind::Truncated, Item::PropCount))?;
        Ok(Self { raw, base, count })
    }

    /// Decodes a property set that must fill `buf` exactly (for example a
    /// set reassembled from continued `RDMA2_CONNPROP` messages).
    pub fn parse(buf: &'a [u8]) -> Result<Self> {
        let mut r = XdrReader::new(buf);
        let s = Self::decode(&mut r)?;
        r.finish(Item::Header)?;
        Ok(s)
    }

    /// Encodes `props` as a `rpcrdma2_propset`.
    pub fn encode(w: &mut XdrWriter<'_>, props: &[Property<'_>]) -> Result<()> {
        let unrep = Error::new(ErrorKind::Unrepresentable, Item::PropCount, w.position());
        let mut total: usize = 4;
        for p in props {
            total = p
                .encoded_len()
                .and_then(|l| total.checked_add(l))
                .ok_or(unrep)?;
        }
        w.reserve(total)?;
        w.put_u32(u32::try_from(props.len()).map_err(|_| unrep)?)?;
        for p in props {
            p.encode(w)?;
        }
        Ok(())
    }

    /// Number of properties (including unknown ones).
    #[inline]
    pub const fn len(&self) -> usize {
        self.count
    }

    /// True if the set is empty.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The encoded elements (without the count word).
    #[inline]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// Iterates over the properties in array order, unknown ones included.
    pub fn iter(&self) -> Properties<'a> {
        Properties {
            r: XdrReader::new(self.raw),
            base: self.base,
            left: self.count,
        }
    }

    /// The property values this set gives, over the draft's defaults;
    /// unknown properties are skipped, as §5.1 and §6.4.4 require.
    pub fn values(&self) -> TransportProperties {
        let mut t = TransportProperties::default();
        for p in self.iter() {
            t.apply(&p);
        }
        t
    }
}

impl<'a> IntoIterator for PropSet<'a> {
    type Item = Property<'a>;
    type IntoIter = Properties<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterator over a [`PropSet`].
#[derive(Clone, Debug)]
pub struct Properties<'a> {
    r: XdrReader<'a>,
    base: usize,
    left: usize,
}

impl<'a> Iterator for Properties<'a> {
    type Item = Property<'a>;

    fn next(&mut self) -> Option<Property<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left = self.left.saturating_sub(1);
        // Validated when decoded: none of these can fail.
        let id = self.r.u32(Item::PropId).ok()?;
        let data = self.r.opaque_var(Item::PropData).ok()?;
        Property::interpret(id, data, self.base).ok()
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

/// The five `uint32` transport properties, with the defaults of draft -00
/// §5.2 (used for every property a peer does not send).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TransportProperties {
    /// Maximum Send Size (default 4096).
    pub max_send_size: u32,
    /// Receive Buffer Size (default 4096).
    pub recv_buf_size: u32,
    /// Maximum RDMA Segment Size (default 1048576).
    pub max_segment_size: u32,
    /// Maximum RDMA Segment Count (default 16).
    pub max_segment_count: u32,
    /// Reverse Request Support (default `RVREQSUP_INLINE`).
    pub reverse_request_support: u32,
}

impl Default for TransportProperties {
    fn default() -> Self {
        Self::DEFAULTS
    }
}

impl TransportProperties {
    /// The draft -00 defaults.
    pub const DEFAULTS: Self = Self {
        max_send_size: 4096,
        recv_buf_size: 4096,
        max_segment_size: 1_048_576,
        max_segment_count: 16,
        reverse_request_support: RVREQSUP_INLINE,
    };

    /// Applies one property (unknown ones and Host Auth are ignored;
    /// [`Property::Default`] restores the default).
    pub fn apply(&mut self, p: &Property<'_>) {
        let d = Self::DEFAULTS;
        match *p {
            Property::MaxSendSize(v) => self.max_send_size = v,
            Property::RecvBufSize(v) => self.recv_buf_size = v,
            Property::MaxSegmentSize(v) => self.max_segment_size = v,
            Property::MaxSegmentCount(v) => self.max_segment_count = v,
            Property::ReverseRequestSupport(v) => self.reverse_request_support = v,
            Property::Default(PROPID_SBSIZ) => self.max_send_size = d.max_send_size,
            Property::Default(PROPID_RBSIZ) => self.recv_buf_size = d.recv_buf_size,
            Property::Default(PROPID_RSSIZ) => self.max_segment_size = d.max_segment_size,
            Property::Default(PROPID_RCSIZ) => self.max_segment_count = d.max_segment_count,
            Property::Default(PROPID_BRS) => {
                self.reverse_request_support = d.reverse_request_support
            }
            _ => {}
        }
    }
}
