// Links libzcal. ZCAL_LIB_DIR names the directory of libzcal.so (a meson
// build's client/ folder); without it the system's libzcal (libzcal-dev)
// is linked from the linker's default paths.
use std::env;

fn main() {
    println!("cargo:rerun-if-env-changed=ZCAL_LIB_DIR");
    if let Ok(dir) = env::var("ZCAL_LIB_DIR") {
        println!("cargo:rustc-link-search=native={}", dir);
        // Tests and examples then find the same library at run time.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=zcal");
}
