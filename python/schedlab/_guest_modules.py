"""The kernel modules a guest needs before it can send its results back.

The guest returns its results over a virtio serial port. Debian's 6.12
(bookworm-backports) builds `virtio_pci` and `virtio_console` in; Debian
12's own 6.1 builds them as modules (`CONFIG_VIRTIO=m`, `CONFIG_VIRTIO_PCI=m`,
`CONFIG_VIRTIO_CONSOLE=m`, uncompressed: `CONFIG_MODULE_COMPRESS_NONE`), and
a guest without them boots, runs its job and has no port to write to. So the
kernel's package gives up those modules too: they go into the initramfs and
`/init` loads them, in dependency order, before the job.
"""

from __future__ import annotations

from pathlib import Path

# In load order: each needs only those before it. A kernel that builds one in
# has no .ko for it, and it is skipped.
MODULES = (
    "virtio",
    "virtio_ring",
    "virtio_pci_legacy_dev",
    "virtio_pci_modern_dev",
    "virtio_pci",
    "virtio_console",
)

# Where a kernel's kept modules live, beside its vmlinuz: the directory's
# presence says the package's modules were looked at (it may stay empty).
MODULES_DIR = "modules"


def keep_modules(tree: Path, kdir: Path) -> None:
    """Copies `MODULES` found in an extracted kernel package `tree`
    (`lib/modules/VERSION/kernel/...`) to ``kdir/modules``, numbered in load
    order."""
    dest = kdir / MODULES_DIR
    dest.mkdir(parents=True, exist_ok=True)
    found = {p.name: p for p in tree.glob("lib/modules/*/kernel/**/*.ko")}
    for i, name in enumerate(MODULES):
        src = found.get(f"{name}.ko")
        if src is not None:
            (dest / f"{i:02d}-{name}.ko").write_bytes(src.read_bytes())


def module_files(kdir: Path) -> dict[str, Path]:
    """The initramfs entries (guest path -> host path) of the modules kept
    for the kernel in `kdir`; `/init` loads ``/modules/*.ko`` in name order."""
    d = kdir / MODULES_DIR
    return {f"/modules/{p.name}": p for p in sorted(d.glob("*.ko"))} if d.is_dir() else {}
