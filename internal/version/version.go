// Package version carries build identity, stamped at link time by the Makefile
// (-ldflags -X) so /health/version can tell operators exactly what is running.
package version

import "runtime"

// Version is the release name; "dev" for local builds.
var Version = "dev"

// Commit is the git commit the binary was built from; "unknown" when not stamped.
var Commit = "unknown"

// GoVersion reports the toolchain that built the binary.
func GoVersion() string { return runtime.Version() }
