//! Raw Ethernet (docs/model.md, "Raw Ethernet"). The files of this directory sit in the
//! layers their work belongs to ("Code layout"): the frame, the send WQE's Ethernet segment,
//! segmentation, steering rules and the receive hash are formats; receiving a frame and the
//! switch that carries it are the responder's; the raw send queue is a transport of the
//! requester. This file only declares them.

pub(crate) mod flow;
pub(crate) mod frame;
pub(crate) mod rss;
pub(crate) mod rx;
pub(crate) mod seg;
pub(crate) mod switch;
pub(crate) mod tso;
pub(crate) mod tx;
