// Package subplugin hosts MetaClaw's sub-plugins: out-of-process backends
// behind the host's Go interfaces, run through hashicorp/go-plugin over gRPC
// with AutoMTLS, beside in-process built-ins behind the same interfaces.
//
// The first kind is the Embedder (embed.Embedder). A kind is registered with
// RegisterKind (handshake, gRPC adapters, an Info probe); Trainer and Judge
// are meant to be added the same way (see Kind).
//
// Plugins are executables named metaclaw-<kind>-<name> in the plugins
// directory ($METACLAW_HOME/plugins), or named by path in config. A Host
// launches them (Managed go-plugin clients, gRPC only, AutoMTLS), checks them
// (handshake, certificate, Info), watches them (process exit, gRPC health
// checks), relaunches a crashed one on the next call with a bounded, backed-off
// restart policy, and reports them (Status, AllStatus). Every call carries a
// deadline, so a dead or hung plugin costs an error, never the host.
//
// The contract a plugin implements, and how to write one in Go or any other
// language, is in docs/subplugins.md; the shared Go half is package sdk.
package subplugin
