package memory

import "github.com/metaclaw-go/metaclaw/host/safety"

// RedactedPrefix starts every replacement (safety.RedactedPrefix).
const RedactedPrefix = safety.RedactedPrefix

// Redact replaces secrets in text and reports how many it replaced: the
// redactor shared with the proxy's stored turn bodies (host/safety).
func Redact(text string) (string, int) { return safety.Redact(text) }
