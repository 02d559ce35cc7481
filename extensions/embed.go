// Package extensions holds the files MetaClaw drops into clients' extension
// and hook folders, embedded in the binary so `metaclaw wire <client>` can
// install them without any download.
package extensions

import (
	"embed"
	"io/fs"
)

//go:embed openclaw/package.json openclaw/openclaw.plugin.json openclaw/index.mjs
var openclawFiles embed.FS

// OpenClaw is the OpenClaw plugin folder: package.json, openclaw.plugin.json
// and index.mjs (a dependency-free shim that starts
// `bin/metaclaw plugin serve --client openclaw` once per process). The
// installer copies these files into the extension folder and puts the
// metaclaw binary (or a link to it) at bin/metaclaw beside them.
func OpenClaw() fs.FS {
	sub, err := fs.Sub(openclawFiles, "openclaw")
	if err != nil {
		panic(err) // the embedded directory is fixed at build time
	}
	return sub
}

// OpenClawPluginID is the plugin id in openclaw.plugin.json (the key of
// plugins.entries.<id> in the OpenClaw config).
const OpenClawPluginID = "metaclaw"
