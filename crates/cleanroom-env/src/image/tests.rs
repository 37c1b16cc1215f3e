use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::*;

/// A scratch cleanroom home, removed (mount-checked) when dropped.
struct TempHome(PathBuf);

impl TempHome {
    fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cleanroom-image-{tag}-{}-{n}", std::process::id()));
        let _ = remove_tree(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempHome(dir)
    }
}

impl Drop for TempHome {
    fn drop(&mut self) {
        for entry in std::fs::read_dir(self.0.join("images")).into_iter().flatten().flatten() {
            let _ = remove_tree(&entry.path());
        }
        let _ = remove_tree(&self.0);
    }
}

/// A host whose apt configuration names a mirror and a security archive.
fn fake_host(home: &Path) -> Host {
    let apt_dir = home.join("host-apt");
    std::fs::create_dir_all(apt_dir.join("sources.list.d")).unwrap();
    std::fs::write(
        apt_dir.join("sources.list.d/debian.sources"),
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: main\n\n\
         Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n",
    )
    .unwrap();
    Host { apt_dir, ca_dir: home.join("host-cas") }
}

/// A populate step that writes a tiny tree and counts its calls.
fn fake_populate<'a>(calls: &'a AtomicUsize, delay: Duration) -> Box<Populate<'a>> {
    Box::new(move |root: &Path, plan: &bootstrap::Plan, _ca: &Path, progress: &mut dyn FnMut(&str)| {
        progress(&format!("debootstrap {} from {}", plan.spec.suite, plan.mirror));
        let n = calls.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(delay);
        std::fs::create_dir_all(root.join("usr/bin")).unwrap();
        std::fs::create_dir_all(root.join("workspace")).unwrap();
        std::fs::write(root.join("usr/bin/apt-get"), format!("build {n}")).unwrap();
        std::fs::write(root.join("mirror"), &plan.mirror).unwrap();
        std::fs::write(root.join("security"), plan.security.as_deref().unwrap_or("")).unwrap();
        Ok(())
    })
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().mode() & 0o7777
}

#[test]
fn unknown_image_names_are_errors_listing_the_known_ones() {
    let home = TempHome::new("unknown");
    let err = spec("debian-13-huge").unwrap_err();
    assert!(matches!(err, EnvError::UnknownImage { .. }));
    assert_eq!(err.to_string(), "unknown image `debian-13-huge` (known images: debian-12-minimal)");
    assert!(matches!(lookup_in(&home.0, "nope", Flavour::Sandbox), Err(EnvError::UnknownImage { .. })));
    let calls = AtomicUsize::new(0);
    let host = fake_host(&home.0);
    let r = build_in(
        &home.0,
        "nope",
        Flavour::Sandbox,
        None,
        false,
        &host,
        &mut fake_populate(&calls, Duration::ZERO),
        &mut |_| {},
    );
    assert!(matches!(r, Err(EnvError::UnknownImage { .. })));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn image_build_lifecycle_with_a_fake_bootstrap() {
    let home = TempHome::new("lifecycle");
    let host = fake_host(&home.0);
    let calls = AtomicUsize::new(0);
    let mut populate = fake_populate(&calls, Duration::ZERO);
    assert!(lookup_in(&home.0, DEFAULT_IMAGE, Flavour::Sandbox).unwrap().is_none());

    let mut lines = Vec::new();
    let image = ensure_in(&home.0, DEFAULT_IMAGE, Flavour::Sandbox, None, &host, &mut populate, &mut |l| {
        lines.push(l.to_owned())
    })
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(lines[0], "debootstrap bookworm from http://mirror.example/debian");
    assert!(lines.last().unwrap().starts_with("image debian-12-minimal ready (sha256:"), "{lines:?}");

    let dir = home.0.join("images").join(DEFAULT_IMAGE);
    assert_eq!(image.root, std::path::absolute(dir.join("rootfs")).unwrap());
    assert_eq!(
        std::fs::read_to_string(image.root.join("security")).unwrap(),
        "http://mirror.example/debian-security"
    );
    assert_eq!(image.digest, tree_digest(&image.root).unwrap());
    assert_eq!(image.info.digest, image.digest);
    assert_eq!((image.info.suite.as_str(), image.info.variant.as_str()), ("bookworm", "minbase"));
    assert_eq!(image.info.mirror, "http://mirror.example/debian");
    assert_eq!(image.info.tool_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(image.info.created.len(), "2025-05-20T08:30:00.000Z".len());
    assert_eq!(mode(&dir.join("image.json")) & 0o222, 0);
    assert_eq!(mode(&image.root) & 0o222, 0);
    let on_disk: ImageInfo =
        serde_json::from_str(&std::fs::read_to_string(dir.join("image.json")).unwrap()).unwrap();
    assert_eq!(on_disk, image.info);

    // Cached: lookup and ensure return it without building.
    let found = lookup_in(&home.0, DEFAULT_IMAGE, Flavour::Sandbox).unwrap().unwrap();
    assert_eq!((found.root.clone(), found.digest.clone()), (dir.join("rootfs"), image.digest.clone()));
    let mut lines = Vec::new();
    let again = ensure_in(&home.0, DEFAULT_IMAGE, Flavour::Sandbox, None, &host, &mut populate, &mut |l| {
        lines.push(l.to_owned())
    })
    .unwrap();
    assert_eq!((calls.load(Ordering::SeqCst), lines.len()), (1, 0));
    assert_eq!(again.digest, image.digest);
    // Without force, build reuses it too.
    build_in(&home.0, DEFAULT_IMAGE, Flavour::Sandbox, None, false, &host, &mut populate, &mut |_| {})
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Forced, with another mirror: replaced in place, nothing left beside it.
    let rebuilt = build_in(
        &home.0,
        DEFAULT_IMAGE,
        Flavour::Sandbox,
        Some("https://other.example/debian/"),
        true,
        &host,
        &mut populate,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_ne!(rebuilt.digest, image.digest);
    assert_eq!(rebuilt.info.mirror, "https://other.example/debian");
    assert_eq!(std::fs::read_to_string(rebuilt.root.join("usr/bin/apt-get")).unwrap(), "build 1");
    assert_eq!(lookup_in(&home.0, DEFAULT_IMAGE, Flavour::Sandbox).unwrap().unwrap().digest, rebuilt.digest);
    assert_eq!(names_in(&home.0.join("images")), ["debian-12-minimal", "debian-12-minimal.lock"]);
}

#[test]
fn a_failed_build_leaves_nothing_and_leftovers_are_swept() {
    let home = TempHome::new("failed");
    let host = fake_host(&home.0);
    let mut failing = |root: &Path, _: &bootstrap::Plan, _: &Path, _: &mut dyn FnMut(&str)| {
        std::fs::create_dir_all(root.join("etc")).unwrap();
        Err(EnvError::Command { program: "debootstrap".into(), detail: "exit status: 1".into() })
    };
    let err =
        build_in(&home.0, DEFAULT_IMAGE, Flavour::Sandbox, None, false, &host, &mut failing, &mut |_| {})
            .unwrap_err();
    assert_eq!(err.to_string(), "debootstrap failed: exit status: 1");
    assert_eq!(names_in(&home.0.join("images")), ["debian-12-minimal.lock"]);
    assert!(lookup_in(&home.0, DEFAULT_IMAGE, Flavour::Sandbox).unwrap().is_none());

    // What a builder that was killed would leave; the next build sweeps it.
    let stale = home.0.join("images/.debian-12-minimal.tmp-99999/rootfs/etc");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::set_permissions(stale.parent().unwrap(), std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::create_dir_all(home.0.join("images/.other-image.tmp-1")).unwrap();
    let calls = AtomicUsize::new(0);
    build_in(
        &home.0,
        DEFAULT_IMAGE,
        Flavour::Sandbox,
        None,
        false,
        &host,
        &mut fake_populate(&calls, Duration::ZERO),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        names_in(&home.0.join("images")),
        [".other-image.tmp-1", "debian-12-minimal", "debian-12-minimal.lock"]
    );
}

#[test]
fn concurrent_image_builders_build_once() {
    let home = TempHome::new("concurrent");
    let host = fake_host(&home.0);
    let calls = AtomicUsize::new(0);
    let results: Vec<(Image, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut lines = Vec::new();
                    let mut populate = fake_populate(&calls, Duration::from_millis(400));
                    let image = ensure_in(
                        &home.0,
                        DEFAULT_IMAGE,
                        Flavour::Sandbox,
                        None,
                        &host,
                        &mut populate,
                        &mut |l| lines.push(l.to_owned()),
                    )
                    .unwrap();
                    (image, lines)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(results[0].0.digest, results[1].0.digest);
    let waited: Vec<_> =
        results.iter().filter(|(_, l)| l.iter().any(|l| l.starts_with("waiting for"))).collect();
    assert_eq!(waited.len(), 1, "{results:?}");
    assert!(waited[0].1.iter().any(|l| l.starts_with("image debian-12-minimal is already built")));
}

#[test]
fn image_mirror_from_flag_or_host_or_error() {
    let home = TempHome::new("mirror");
    let host = fake_host(&home.0);
    let spec = spec(DEFAULT_IMAGE).unwrap();
    let from_host = plan(spec, None, &host).unwrap();
    assert_eq!(from_host.mirror, "http://mirror.example/debian");
    assert_eq!(from_host.security.as_deref(), Some("http://mirror.example/debian-security"));
    let given = plan(spec, Some("http://given.example/debian//"), &host).unwrap();
    assert_eq!(given.mirror, "http://given.example/debian");
    assert_eq!(given.security.as_deref(), Some("http://mirror.example/debian-security"));

    let bad = plan(spec, Some("deb.debian.org/debian"), &host).unwrap_err().to_string();
    assert_eq!(bad, "--mirror \"deb.debian.org/debian\" is not an http:// or https:// URL");

    let bare = Host { apt_dir: home.0.join("no-apt"), ca_dir: home.0.join("no-cas") };
    let err = plan(spec, None, &bare).unwrap_err().to_string();
    assert!(err.ends_with("pass --mirror URL"), "{err}");
    assert!(err.contains("no-apt/sources.list"), "{err}");
    assert!(plan(spec, Some("http://given.example/debian"), &bare).unwrap().security.is_none());
}

#[test]
fn image_mountinfo_escapes() {
    let text = "36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw\n\
                37 35 0:5 / /proc rw - proc proc rw\n";
    assert_eq!(parse_mount_points(text), [PathBuf::from("/mnt/with space"), PathBuf::from("/proc")]);
}

/// A real debootstrap build (root, network and the host's mirror needed:
/// the full tier, never the fast one). Two builders race; one builds, the
/// other reuses.
#[test]
fn real_image_build_with_debootstrap() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let host = Host::system();
    let mirror = cleanroom_apt::pick_mirror(&cleanroom_apt::host_sources(&host.apt_dir), "bookworm");
    assert!(
        root && Path::new("/usr/sbin/debootstrap").exists() && mirror.is_some(),
        "needs root, /usr/sbin/debootstrap (scripts/setup.sh) and a configured Debian mirror"
    );
    let home = TempHome::new("real");
    let started = Instant::now();
    let results: Vec<(Image, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut lines = Vec::new();
                    let image = ensure_in(
                        &home.0,
                        DEFAULT_IMAGE,
                        Flavour::Sandbox,
                        None,
                        &Host::system(),
                        &mut bootstrap::populate,
                        &mut |l| lines.push(l.to_owned()),
                    )
                    .unwrap();
                    (image, lines)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    eprintln!("built in {:.1?}: {:#?}", started.elapsed(), results.iter().map(|r| &r.1).collect::<Vec<_>>());
    let builders =
        results.iter().filter(|(_, l)| l.iter().any(|l| l.starts_with("debootstrap bookworm from "))).count();
    assert_eq!(builders, 1);
    assert_eq!(results[0].0.digest, results[1].0.digest);
    let image = &results[0].0;
    let rootfs = &image.root;

    assert!(rootfs.join("usr/bin/apt-get").is_file());
    assert!(!rootfs.join("usr/bin/python3").exists(), "minbase has no python");
    assert!(rootfs.join("workspace").is_dir());
    assert_eq!(std::fs::read_to_string(rootfs.join("etc/resolv.conf")).unwrap(), "nameserver 10.0.2.3\n");
    assert_eq!(std::fs::read_to_string(rootfs.join("etc/hostname")).unwrap(), "cleanroom\n");

    // The host's extra CAs are trusted inside.
    let bundle = std::fs::read_to_string(rootfs.join("etc/ssl/certs/ca-certificates.crt")).unwrap();
    let mut host_certs = Vec::new();
    collect_crts(Path::new(bootstrap::HOST_CA_DIR), &mut host_certs);
    for cert in &host_certs {
        let text = std::fs::read_to_string(cert).unwrap();
        let line = text.lines().nth(1).expect("a PEM body line");
        assert!(bundle.contains(line), "{} is not in the image's CA bundle", cert.display());
    }

    // apt is ready: sources for the suite and updates, lists fetched, no debs kept.
    let sources_text = std::fs::read_to_string(rootfs.join("etc/apt/sources.list.d/debian.sources")).unwrap();
    assert!(sources_text.contains(&format!("URIs: {}\nSuites: bookworm bookworm-updates\n", mirror.unwrap())));
    assert!(!rootfs.join("etc/apt/sources.list").exists());
    let lists = names_in(&rootfs.join("var/lib/apt/lists"));
    assert!(lists.iter().any(|n| n.ends_with("_dists_bookworm_main_binary-amd64_Packages")), "{lists:?}");
    assert!(lists.iter().any(|n| n.ends_with("_dists_bookworm-updates_InRelease")), "{lists:?}");
    let debs = names_in(&rootfs.join("var/cache/apt/archives"));
    assert!(debs.iter().all(|n| !n.ends_with(".deb")), "{debs:?}");

    // The recorded digest is the tree's.
    let t = Instant::now();
    assert_eq!(tree_digest(rootfs).unwrap(), image.digest);
    eprintln!("digest recomputed in {:.1?}", t.elapsed());
    assert_eq!(mode(rootfs) & 0o222, 0);

    // Cached: no rebuild, no progress, fast.
    let t = Instant::now();
    let mut lines = Vec::new();
    let again = ensure_in(
        &home.0,
        DEFAULT_IMAGE,
        Flavour::Sandbox,
        None,
        &host,
        &mut bootstrap::populate,
        &mut |l| lines.push(l.to_owned()),
    )
    .unwrap();
    assert!(lines.is_empty() && t.elapsed() < Duration::from_secs(1), "{lines:?}");
    assert_eq!(again.digest, image.digest);

    // No mount left behind in this namespace.
    let home_abs = std::fs::canonicalize(&home.0).unwrap();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!parse_mount_points(&mounts).iter().any(|m| m.starts_with(&home_abs)), "{mounts}");
}

fn collect_crts(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_crts(&path, out);
        } else if path.extension().is_some_and(|e| e == "crt") {
            out.push(path);
        }
    }
}

#[test]
fn a_machine_image_of_another_recipe_is_not_found() {
    let home = TempHome::new("recipe");
    let dir = home.0.join("images").join(Flavour::Machine.dir_name(DEFAULT_IMAGE));
    std::fs::create_dir_all(dir.join("rootfs")).unwrap();
    let mut info = ImageInfo {
        name: DEFAULT_IMAGE.into(),
        suite: "bookworm".into(),
        variant: "minbase".into(),
        mirror: "http://mirror.example/debian".into(),
        digest: "sha256:0".into(),
        created: "2026-12-01T00:00:00.000Z".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        flavour_recipe: "machine-0".into(),
    };
    std::fs::write(dir.join("image.json"), serde_json::to_string(&info).unwrap()).unwrap();
    assert!(
        lookup_in(&home.0, DEFAULT_IMAGE, Flavour::Machine).unwrap().is_none(),
        "an old recipe is rebuilt"
    );
    info.flavour_recipe = Flavour::Machine.recipe().into();
    std::fs::write(dir.join("image.json"), serde_json::to_string(&info).unwrap()).unwrap();
    assert!(lookup_in(&home.0, DEFAULT_IMAGE, Flavour::Machine).unwrap().is_some());
    assert!(
        lookup_in(&home.0, DEFAULT_IMAGE, Flavour::Sandbox).unwrap().is_none(),
        "flavours have their own images"
    );
}
