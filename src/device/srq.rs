//! A shared receive queue as an object ([`Srq`]).

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::backend::Backend;
use crate::rq::{SharedRecvQueue, SrqShared};

use super::pd::PdInner;

#[derive(Debug)]
pub(super) struct SrqInner<B: Backend> {
    pub(super) handle: B::Srq,
    pub(super) shared: Arc<SrqShared>,
    pub(super) _pd: Arc<PdInner<B>>,
}

/// A shared receive queue: posting goes through [`SharedRecvQueue`] (`Deref`).
#[derive(Debug)]
pub struct Srq<B: Backend> {
    pub(super) queue: SharedRecvQueue,
    pub(super) srqn: u32,
    pub(super) inner: Arc<SrqInner<B>>,
}

impl<B: Backend> Srq<B> {
    /// SRQ number.
    pub fn srqn(&self) -> u32 {
        self.srqn
    }
}

impl<B: Backend> Deref for Srq<B> {
    type Target = SharedRecvQueue;
    fn deref(&self) -> &Self::Target {
        &self.queue
    }
}

impl<B: Backend> DerefMut for Srq<B> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.queue
    }
}
