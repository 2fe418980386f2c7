//! Binding, address and route resolution, and the queries of an id's addresses and route
//! (cma.c `rdma_bind_addr_dst`, `cma_get_port`, `rdma_resolve_addr`,
//! `cma_resolve_loopback`, `cma_resolve_ib_addr`, `rdma_resolve_route`; addr.c
//! `rdma_resolve_ip`; ucma.c `ucma_query_route`, `ucma_query_addr`, `ucma_query_path`,
//! `ucma_query_gid`).
//!
//! The fabric's addresses are the NICs' (`10.47.0.N`, IPv4 only), all on the host the
//! programs run on, so a destination that is one of them is reached through its own NIC
//! (the kernel routes a local address through `lo` and takes the device that owns it,
//! `rdma_set_src_addr_rcu`), unless the id was bound to another NIC's address first. An
//! address of the fabric's subnet that no NIC has never answers ARP (`ADDR_ERROR`,
//! `-ETIMEDOUT` after the timeout); any other address leaves through a device that is no
//! RDMA device (`ADDR_ERROR`, `-ENODEV`, `cma_acquire_dev_by_src_ip`).

use super::addr::{self, Addr, AF_INET, AF_INET6};
use super::cmd::{Call, Res};
use super::route::{NicInfo, Path, DEFAULT_PKEY};
use super::{Cma, Dev, Due, State};
use crate::abi::ucma::*;
use crate::abi::{FromZeros, IntoBytes};
use std::mem::size_of;

/// `PROT_SOCK`: ports below it need `CAP_NET_BIND_SERVICE`.
const PROT_SOCK: u16 = 1024;

impl State {
    pub(super) fn bind_ip(&mut self, c: &Call<'_>, nics: &[NicInfo]) -> Res {
        let cmd: rdma_ucm_bind_ip = c.req()?;
        let a = Addr::parse(cmd.addr.as_bytes()).map_err(|_| libc::EINVAL)?;
        // rdma_addr_size_in6: an IP family that fits a sockaddr_in6.
        if a.size() == 0 || a.size() > size_of::<sockaddr_in6>() {
            return Err(libc::EINVAL);
        }
        let id = self.ctx(c.file, cmd.id)?;
        self.bind(id, a, c.pid, nics)
    }

    pub(super) fn bind_cmd(&mut self, c: &Call<'_>, nics: &[NicInfo]) -> Res {
        let cmd: rdma_ucm_bind = c.req()?;
        let a = Addr::parse(cmd.addr.as_bytes()).unwrap_or(Addr::None);
        if cmd.reserved != 0 || cmd.addr_size == 0 || usize::from(cmd.addr_size) != a.size() {
            return Err(libc::EINVAL);
        }
        let id = self.ctx(c.file, cmd.id)?;
        self.bind(id, a, c.pid, nics)
    }

    /// `rdma_bind_addr_dst`: an idle id takes `a` (a specific address binds it to the NIC
    /// that has it) and a port of its port space.
    pub(super) fn bind(&mut self, id: u32, mut a: Addr, pid: i32, nics: &[NicInfo]) -> Res {
        if !matches!(a.family(), AF_INET | AF_INET6) && u32::from(a.family()) != AF_IB {
            return Err(libc::EAFNOSUPPORT);
        }
        let i = self.ids.get_mut(&id).expect("checked");
        if i.state != Cma::Idle {
            return Err(libc::EINVAL);
        }
        // cma_check_linklocal: a link-local IPv6 address needs its interface.
        if let Addr::In6 { ip, scope_id, .. } = a {
            if ip[0] == 0xfe && ip[1] & 0xc0 == 0x80 && scope_id == 0 {
                return Err(libc::EINVAL);
            }
        }
        if !a.is_any() {
            // cma_translate_addr, cma_acquire_dev_by_src_ip.
            let (dev, sgid, pkey) = translate(&a, nics)?;
            i.dev = Some(dev);
            i.sgid = sgid;
            i.pkey = pkey;
        }
        if !i.afonly_set {
            i.afonly = match a.family() {
                AF_INET => true,
                AF_INET6 => bindv6only(),
                _ => i.afonly,
            };
        }
        if i.dst.family() != a.family() {
            i.dst = Addr::any_like(&a);
        }
        let Some(ps) = addr::select_ps(i.ps, &mut a) else {
            i.dev = None;
            return Err(libc::EPROTONOSUPPORT);
        };
        i.src = a;
        i.state = Cma::AddrBound;
        let r = self.get_port(id, ps, pid);
        if r.is_err() {
            let i = self.ids.get_mut(&id).expect("checked");
            i.state = Cma::Idle;
            i.dev = None;
            i.src = Addr::None;
        }
        r
    }

    /// `cma_get_port`: the port the address names, or any free one of the local range.
    fn get_port(&mut self, id: u32, ps: u16, pid: i32) -> Res {
        let port = self.ids[&id].src.port();
        if port != 0 {
            if port < PROT_SOCK && !addr::may_bind_privileged(pid) {
                return Err(libc::EACCES);
            }
            if self.binds.contains_key(&(ps, port)) {
                let reuse = self.ids[&id].reuseaddr;
                self.bind_port(id, ps, port);
                if let Err(e) = self.check_port(id, reuse) {
                    self.release_port(id);
                    return Err(e);
                }
            } else {
                self.bind_port(id, ps, port);
            }
            return Ok(());
        }
        // cma_alloc_any_port: from a random port of the range on, the first that is free
        // or that this id may share (`cma_port_is_unique`).
        let (low, high) = addr::local_port_range();
        let span = u32::from(high - low) + 1;
        let start = self.random() % span;
        for k in 0..span {
            let p = low + ((start + k) % span) as u16;
            let unique = match self.binds.get(&(ps, p)) {
                None => true,
                Some(owners) => owners.iter().all(|o| self.unique_with(id, *o)),
            };
            if unique {
                self.bind_port(id, ps, p);
                return Ok(());
            }
        }
        Err(libc::EADDRNOTAVAIL)
    }

    /// `cma_port_is_unique` for one other owner of the port.
    fn unique_with(&self, id: u32, other: u32) -> bool {
        let (me, o) = (&self.ids[&id], &self.ids[&other]);
        (me.dst.port() != 0 && o.dst.port() != 0 && me.dst.port() != o.dst.port())
            || (!me.src.is_any() && !o.src.is_any() && me.src.differs(&o.src))
            || (!me.dst.is_any() && !o.dst.is_any() && me.dst.differs(&o.dst))
    }

    fn bind_port(&mut self, id: u32, ps: u16, port: u16) {
        self.binds.entry((ps, port)).or_default().push(id);
        let i = self.ids.get_mut(&id).expect("checked");
        i.src = i.src.with_port(port);
        i.bind = Some((ps, port));
    }

    /// `cma_release_port`.
    pub(super) fn release_port(&mut self, id: u32) {
        let Some(key) = self.ids.get_mut(&id).and_then(|i| i.bind.take()) else {
            return;
        };
        if let Some(owners) = self.binds.get_mut(&key) {
            owners.retain(|&o| o != id);
            if owners.is_empty() {
                self.binds.remove(&key);
            }
        }
    }

    /// `cma_check_port`: may `id` keep its address and port among the port's other owners
    /// (`EADDRNOTAVAIL` beside a wildcard, `EADDRINUSE` beside the same address)?
    pub(super) fn check_port(&self, id: u32, reuseaddr: bool) -> Res {
        let me = &self.ids[&id];
        let Some(key) = me.bind else {
            return Ok(());
        };
        for &o in self.binds.get(&key).into_iter().flatten() {
            if o == id {
                continue;
            }
            let other = &self.ids[&o];
            if reuseaddr && other.reuseaddr {
                continue;
            }
            if me.afonly && other.afonly && me.src.family() != other.src.family() {
                continue;
            }
            if me.src.is_any() || other.src.is_any() {
                return Err(libc::EADDRNOTAVAIL);
            }
            if !me.src.differs(&other.src) {
                return Err(libc::EADDRINUSE);
            }
        }
        Ok(())
    }

    pub(super) fn resolve_ip(&mut self, c: &Call<'_>, nics: &[NicInfo]) -> Res {
        let cmd: rdma_ucm_resolve_ip = c.req()?;
        let in6 = |a: &sockaddr_in6| {
            Addr::parse(a.as_bytes())
                .ok()
                .filter(|a| a.size() != 0 && a.size() <= size_of::<sockaddr_in6>())
        };
        let src = match cmd.src_addr.sin6_family {
            0 => None,
            _ => Some(in6(&cmd.src_addr).ok_or(libc::EINVAL)?),
        };
        let dst = in6(&cmd.dst_addr).ok_or(libc::EINVAL)?;
        let id = self.ctx(c.file, cmd.id)?;
        self.resolve(id, src, dst, cmd.timeout_ms, c.pid, nics)
    }

    pub(super) fn resolve_addr(&mut self, c: &Call<'_>, nics: &[NicInfo]) -> Res {
        let cmd: rdma_ucm_resolve_addr = c.req()?;
        let src = Addr::parse(cmd.src_addr.as_bytes()).unwrap_or(Addr::None);
        let dst = Addr::parse(cmd.dst_addr.as_bytes()).unwrap_or(Addr::None);
        if cmd.reserved != 0
            || (cmd.src_size != 0 && usize::from(cmd.src_size) != src.size())
            || cmd.dst_size == 0
            || usize::from(cmd.dst_size) != dst.size()
        {
            return Err(libc::EINVAL);
        }
        let id = self.ctx(c.file, cmd.id)?;
        let src = (src.family() != 0).then_some(src);
        self.resolve(id, src, dst, cmd.timeout_ms, c.pid, nics)
    }

    /// `rdma_resolve_addr`: bind if not bound (`resolve_prepare_src`), then find the
    /// destination; ADDR_RESOLVED or ADDR_ERROR follows (module docs).
    fn resolve(
        &mut self,
        id: u32,
        src: Option<Addr>,
        dst: Addr,
        timeout_ms: u32,
        pid: i32,
        nics: &[NicInfo],
    ) -> Res {
        if self.ids[&id].state == Cma::AddrBound {
            self.ids.get_mut(&id).expect("checked").dst = dst;
        } else {
            let from = src.unwrap_or_else(|| Addr::any_like(&dst));
            self.bind(id, from, pid, nics)?;
            self.ids.get_mut(&id).expect("checked").dst = dst;
        }
        let req = self.serial();
        let i = self.ids.get_mut(&id).expect("checked");
        if i.src.family() != dst.family() {
            return Err(libc::EINVAL);
        }
        i.state = Cma::AddrQuery;
        i.addr_req = req;
        if dst.is_any() {
            // cma_resolve_loopback: the first device with an active port, its GID 0.
            if i.dev.is_none() {
                i.dev = Some(Dev {
                    nic: 0,
                    sgid_index: 0,
                });
                i.sgid = nics[0].gid(0);
                i.pkey = DEFAULT_PKEY;
                i.src = i.src.loopback();
            }
            i.dgid = i.sgid;
            i.state = Cma::AddrResolved;
            self.report(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, None);
            return Ok(());
        }
        if let Addr::Ib { gid, .. } = dst {
            // cma_resolve_ib_addr, cma_resolve_ib_dev: an IB port with the GID, or the
            // first on its subnet.
            if i.dev.is_none() {
                let found = nics
                    .iter()
                    .position(|n| !n.roce && n.gid(0) == gid)
                    .or_else(|| {
                        nics.iter()
                            .position(|n| !n.roce && n.gid(0)[..8] == gid[..8])
                    });
                let Some(nic) = found else {
                    i.state = Cma::AddrBound;
                    return Err(libc::ENODEV);
                };
                i.dev = Some(Dev { nic, sgid_index: 0 });
                i.sgid = nics[nic].gid(0);
                i.pkey = DEFAULT_PKEY;
            }
            i.dgid = gid;
            i.state = Cma::AddrResolved;
            self.report(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, None);
            return Ok(());
        }
        // rdma_resolve_ip: a NIC's address, through that NIC unless bound elsewhere.
        let to = dst
            .ipv4()
            .and_then(|ip| nics.iter().position(|n| n.ip == ip));
        match to {
            Some(t) => {
                if i.dev.is_none() {
                    let local = Addr::In {
                        ip: nics[t].ip,
                        port: i.src.port(),
                    };
                    match translate(&local, nics) {
                        Ok((dev, sgid, pkey)) => {
                            i.dev = Some(dev);
                            i.sgid = sgid;
                            i.pkey = pkey;
                            i.src = local;
                        }
                        Err(e) => {
                            i.state = Cma::AddrBound;
                            self.report(id, RDMA_CM_EVENT_ADDR_ERROR, -e, None);
                            return Ok(());
                        }
                    }
                }
                i.dgid = if nics[t].roce {
                    dst.gid()
                } else {
                    nics[t].gid(0)
                };
                i.state = Cma::AddrResolved;
                self.report(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, None);
            }
            None if dst.ipv4().is_some_and(addr::in_subnet) => {
                self.at(u64::from(timeout_ms), Due::AddrTimeout { id, req });
            }
            None => {
                i.state = Cma::AddrBound;
                self.report(id, RDMA_CM_EVENT_ADDR_ERROR, -libc::ENODEV, None);
            }
        }
        Ok(())
    }

    /// RESOLVE_ROUTE (`rdma_resolve_route`): the subnet administrator's path on
    /// InfiniBand, `cma_resolve_iboe_route`'s on RoCE (where a loopback-resolved id has no
    /// netdev: `ENODEV`); ROUTE_RESOLVED follows.
    pub(super) fn resolve_route(&mut self, c: &Call<'_>, nics: &[NicInfo]) -> Res {
        let cmd: rdma_ucm_resolve_route = c.req()?;
        let id = self.ctx_dev(c.file, cmd.id)?;
        if cmd.timeout_ms == 0 {
            return Err(libc::EINVAL);
        }
        let i = self.ids.get_mut(&id).expect("checked");
        if i.state != Cma::AddrResolved {
            return Err(libc::EINVAL);
        }
        let dev = i.dev.expect("checked");
        let here = &nics[dev.nic];
        let path = if !here.roce {
            let Some(there) = nics.iter().find(|n| n.gid(0) == i.dgid) else {
                // No path record: the subnet administrator's query fails.
                i.state = Cma::AddrResolved;
                self.report(id, RDMA_CM_EVENT_ROUTE_ERROR, -libc::ETIMEDOUT, None);
                return Ok(());
            };
            let mut p = Path::ib(here, there, addr::service_id(i.ps, &i.dst));
            p.sl = 0;
            p
        } else {
            // A loopback id was bound by cma_bind_loopback, with no netdev.
            let Some(there) = i
                .dst
                .ipv4()
                .and_then(|ip| nics.iter().find(|n| n.ip == ip))
                .filter(|_| !i.src.is_loopback())
            else {
                return Err(libc::ENODEV);
            };
            let mut p = Path::iboe(i.src.gid(), i.dst.gid(), there, here.mtu);
            p.traffic_class = i.tos.unwrap_or(0);
            if let Some(t) = i.timeout.filter(|&t| t > 0) {
                p.packet_life_time = t - 1;
            }
            // cma_get_roce_udp_flow_label for an IPv4 id: the ports hashed.
            let (sport, dport) = (u32::from(i.src.port()), u32::from(i.dst.port()));
            p.flow_label = (sport * 31 + dport) & 0xf_ffff;
            p
        };
        i.route = Some(path);
        i.state = Cma::RouteResolved;
        self.report(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, None);
        Ok(())
    }

    /// QUERY_ROUTE (`ucma_query_route`, what a librdmacm without AF_IB asks).
    pub(super) fn query_route(&mut self, c: &Call<'_>, nics: &[NicInfo]) -> Res {
        let room = std::mem::offset_of!(rdma_ucm_query_route_resp, ibdev_index);
        if c.out < room {
            return Err(libc::ENOSPC);
        }
        let cmd: rdma_ucm_query = c.req()?;
        let id = self.ctx(c.file, cmd.id)?;
        let i = &self.ids[&id];
        let mut r = rdma_ucm_query_route_resp {
            src_addr: in6_copy(&i.src),
            dst_addr: in6_copy(&i.dst),
            ..Default::default()
        };
        if let Some(d) = i.dev {
            r.node_guid = nics[d.nic].node_guid.to_be();
            r.ibdev_index = d.nic as u32;
            r.port_num = 1;
            match &i.route {
                Some(p) => {
                    r.num_paths = 1;
                    r.ib_route[0] = p.user();
                }
                None if nics[d.nic].roce => {
                    r.ib_route[0].dgid = i.dst.gid();
                    r.ib_route[0].sgid = i.src.gid();
                    r.ib_route[0].pkey = DEFAULT_PKEY.to_be();
                }
                None => {
                    r.ib_route[0].dgid = i.dgid;
                    r.ib_route[0].sgid = i.sgid;
                    r.ib_route[0].pkey = i.pkey.to_be();
                }
            }
        }
        c.respond(cmd.response, &r, c.out)
    }

    /// QUERY (`ucma_query`): the addresses, the path records or the GIDs.
    pub(super) fn query(&mut self, c: &Call<'_>, nics: &[NicInfo]) -> Res {
        let cmd: rdma_ucm_query = c.req()?;
        let id = self.ctx(c.file, cmd.id)?;
        let i = &self.ids[&id];
        let addr_room = std::mem::offset_of!(rdma_ucm_query_addr_resp, ibdev_index);
        let mut r = rdma_ucm_query_addr_resp::new_zeroed();
        if let Some(d) = i.dev {
            r.node_guid = nics[d.nic].node_guid.to_be();
            r.ibdev_index = d.nic as u32;
            r.port_num = 1;
            r.pkey = i.pkey.to_be();
        }
        match cmd.option {
            RDMA_USER_CM_QUERY_ADDR => {
                if c.out < addr_room {
                    return Err(libc::ENOSPC);
                }
                r.src_size = i.src.size() as u16;
                r.dst_size = i.dst.size() as u16;
                r.src_addr = i.src.storage();
                r.dst_addr = i.dst.storage();
                c.respond(cmd.response, &r, c.out)
            }
            RDMA_USER_CM_QUERY_GID => {
                if c.out < addr_room {
                    return Err(libc::ENOSPC);
                }
                // rdma_read_gids: on RoCE the addresses' GIDs, on InfiniBand the device
                // address's; none without a device.
                let roce = i.dev.is_some_and(|d| nics[d.nic].roce);
                let gids = match (i.dev, roce) {
                    (None, _) => ([0; 16], [0; 16]),
                    (Some(_), true) => (i.src.gid(), i.dst.gid()),
                    (Some(_), false) => (i.sgid, i.dgid),
                };
                let ib = |a: &Addr, gid: [u8; 16]| match a {
                    Addr::Ib { .. } => *a,
                    _ => Addr::Ib {
                        pkey: u16::from_be(r.pkey),
                        flowinfo: 0,
                        gid,
                        sid: addr::service_id(i.ps, a),
                        sid_mask: 0,
                        scope_id: 0,
                    },
                };
                let (s, d) = (ib(&i.src, gids.0), ib(&i.dst, gids.1));
                r.src_size = size_of::<sockaddr_ib>() as u16;
                r.dst_size = size_of::<sockaddr_ib>() as u16;
                r.src_addr = s.storage();
                r.dst_addr = d.storage();
                c.respond(cmd.response, &r, c.out)
            }
            RDMA_USER_CM_QUERY_PATH => {
                let head = size_of::<rdma_ucm_query_path_resp>();
                if c.out < head {
                    return Err(libc::ENOSPC);
                }
                let each = size_of::<ib_path_rec_data>();
                let mut out = rdma_ucm_query_path_resp {
                    num_paths: u32::from(i.route.is_some()),
                    reserved: 0,
                }
                .as_bytes()
                .to_vec();
                // As many records as fit with room to spare (`out_len > sizeof`).
                if let Some(p) = i.route.filter(|_| c.out - head > each) {
                    let mut d = ib_path_rec_data {
                        flags: IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL,
                        ..Default::default()
                    };
                    d.path_rec
                        .as_mut_bytes()
                        .copy_from_slice(p.packed().as_bytes());
                    out.extend_from_slice(d.as_bytes());
                }
                c.put(cmd.response, &out)
            }
            _ => Err(libc::ENOSYS),
        }
    }
}

/// What QUERY_ROUTE copies of an address: `sizeof(sockaddr_in)` of an IPv4 one, else
/// `sizeof(sockaddr_in6)` bytes of whatever it is.
fn in6_copy(a: &Addr) -> sockaddr_in6 {
    let mut s = sockaddr_in6::default();
    let b = a.bytes();
    let n = b.len().min(size_of::<sockaddr_in6>());
    s.as_mut_bytes()[..n].copy_from_slice(&b[..n]);
    s
}

/// `cma_translate_addr` and `cma_acquire_dev_by_src_ip` for a specific source address:
/// the NIC that has it (`EADDRNOTAVAIL` for an IP address no NIC has, `ENODEV` when the
/// NIC has no GID for it, or for an AF_IB GID no InfiniBand port has), its source GID and
/// the device address's P_Key (IPoIB's broadcast P_Key; none on Ethernet).
fn translate(a: &Addr, nics: &[NicInfo]) -> Result<(Dev, [u8; 16], u16), i32> {
    match *a {
        Addr::In { ip, .. } => {
            let nic = nics
                .iter()
                .position(|n| n.ip == ip)
                .ok_or(libc::EADDRNOTAVAIL)?;
            let n = &nics[nic];
            let sgid = if n.roce { a.gid() } else { n.gid(0) };
            let sgid_index = n.sgid_index(&sgid).ok_or(libc::ENODEV)?;
            let pkey = if n.roce { 0 } else { DEFAULT_PKEY };
            Ok((Dev { nic, sgid_index }, sgid, pkey))
        }
        Addr::Ib { gid, pkey, .. } => {
            let nic = nics
                .iter()
                .position(|n| !n.roce && n.gid(0) == gid)
                .ok_or(libc::ENODEV)?;
            Ok((Dev { nic, sgid_index: 0 }, gid, pkey))
        }
        // The fabric's NICs have no IPv6 addresses (docs/emulator.md).
        _ => Err(libc::EADDRNOTAVAIL),
    }
}

/// `net.ipv6.bindv6only`: whether an IPv6 wildcard leaves IPv4 alone (the kernel's
/// default `afonly` of an AF_INET6 id).
fn bindv6only() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv6/bindv6only").is_ok_and(|s| s.trim() == "1")
}
