//! `schedlab-wl FAMILY:key=value,...`: run one native workload and print its
//! metric as one JSON line. See the crate's README.md.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    schedlab_wl::install_sigint_stop();
    std::process::exit(schedlab_wl::main_with_args(&args));
}
