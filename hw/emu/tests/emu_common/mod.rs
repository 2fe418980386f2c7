//! Running programs under `mlx5-emu run`: the binary and preload of this build, a fabric of
//! its own per test (its own directory, so tests run in parallel), free TCP ports, and
//! server / client pairs with a deadline.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

/// The `mlx5-emu` binary of this build.
pub fn emu() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_mlx5-emu"))
}

/// Make sure the preload of this build's profile sits next to the binary (a `cargo test -p
/// mlx5-emu` does not build the `cdylib` package).
pub fn ensure_preload() {
    static BUILT: Once = Once::new();
    BUILT.call_once(|| {
        let so = emu().with_file_name("libmlx5_emu_preload.so");
        if so.is_file() {
            return;
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-p", "mlx5-emu-preload"]);
        if emu().parent().and_then(|d| d.file_name()) == Some("release".as_ref()) {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo to build the preload");
        assert!(status.success(), "building mlx5-emu-preload failed");
        assert!(so.is_file(), "{} is still missing", so.display());
    });
}

/// A TCP port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// One fabric: a name and a directory of its own.
pub struct Fabric {
    pub name: String,
    pub dir: PathBuf,
    pub args: Vec<String>,
}

impl Fabric {
    /// A fabric for test `name` with `mlx5-emu run` options `args` (`--nics`, `--link`).
    pub fn new(name: &str, args: &[&str]) -> Fabric {
        ensure_preload();
        let dir = std::env::temp_dir().join(format!("mlx5-emu-test-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Fabric {
            name: name.into(),
            dir,
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The same fabric, run with `mlx5-emu run` options `args` instead.
    pub fn with_args(&self, args: &[&str]) -> Fabric {
        Fabric {
            name: self.name.clone(),
            dir: self.dir.clone(),
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// `mlx5-emu run ... -- program args`, its output captured.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(emu());
        cmd.env("MLX5_EMU_DIR", &self.dir)
            .args(["run", "--fabric", &self.name])
            .args(&self.args)
            .arg("--")
            .arg(program)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Run `program args` to its end (at most `limit`).
    pub fn run(&self, program: &str, args: &[&str], limit: Duration) -> Output {
        finish(
            self.command(program, args).spawn().expect("spawn mlx5-emu"),
            limit,
        )
    }

    /// A server (`server_args`) and a client (`client_args` then `localhost`) of `program`
    /// on this fabric, the client started once the server listens; both outputs.
    pub fn pair(
        &self,
        program: &str,
        server_args: &[&str],
        client_args: &[&str],
        limit: Duration,
    ) -> (Output, Output) {
        let server = self
            .command(program, server_args)
            .spawn()
            .expect("spawn server");
        std::thread::sleep(Duration::from_millis(300));
        let mut args = client_args.to_vec();
        args.push("localhost");
        let client = self.command(program, &args).spawn().expect("spawn client");
        let c = finish(client, limit);
        let s = finish(server, limit);
        (s, c)
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join(format!("{}.log", self.name))).unwrap_or_default()
    }
}

/// Wait for `child` at most `limit`, then kill it; its output.
pub fn finish(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().expect("output")
}

/// Both sides exited 0; else a panic with everything they printed.
pub fn assert_ok(what: &str, fabric: &Fabric, outputs: &[&Output]) {
    for (i, o) in outputs.iter().enumerate() {
        assert!(
            o.status.success(),
            "{what}: side {i} ended with {:?}\nstdout:\n{}\nstderr:\n{}\nserver log:\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
            fabric.log()
        );
    }
}

/// Everything a program printed.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
