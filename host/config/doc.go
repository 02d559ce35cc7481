// Package config loads, validates and edits MetaClaw's configuration.
//
// The state dir is $METACLAW_HOME (default ~/.metaclaw). It holds
// config.yaml, which an existing Python-MetaClaw config.yaml can be used as
// unchanged, and secrets.yaml (mode 0600), which holds only the secret keys
// (api keys, tokens) in the same nested shape.
//
// The schema is the Config struct itself: its fields' tags carry each key's
// default, description, allowed values, bounds and secret flag (see
// schema.go), and everything else — Default, Load, Validate, Set, Keys and
// the METACLAW_* environment overrides — is driven from there, so adding a
// key is a one-line change.
//
// Precedence, lowest first: built-in defaults, config.yaml, secrets.yaml,
// METACLAW_<KEY> environment variables (e.g. METACLAW_LLM_API_BASE), then,
// only for an upstream still unset, OPENAI_BASE_URL/OPENAI_API_KEY or
// ANTHROPIC_BASE_URL/ANTHROPIC_API_KEY. Config.Sources and
// Config.UpstreamSource tell which one won.
//
// Problems are reported all at once as errors.Join of *Error values naming
// the file and line (or environment variable), the key and the fix.
// Non-fatal findings (legacy keys, a secrets file readable by others, a
// Python 0.0.0.0 bind downgraded to loopback) go to Config.Warnings.
//
// Set and Unset edit the files in place through internal/yamledit's Doc,
// the one YAML editor (the client adapters use it too), for one-line and
// block values alike: comments, key order, quoting and line ends are kept,
// and an edit whose text would not re-parse to exactly the intended data
// is refused. They write atomically, and never overwrite a file they
// cannot fully parse.
package config
