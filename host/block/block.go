// Package block knows the delimiters of the block MetaClaw injects into a
// turn. The core renders the block; everything that reads text later (the
// proxy, learning, the stdio plugins) strips it with Strip, so the layer
// never learns from its own output. It depends on nothing, so that the
// client side can strip the block without linking the host.
package block

import "strings"

// Markers delimit the injected block. They are stable so that a request that
// already carries the block (hook path and proxy path on one client) is not
// injected twice, and so extraction can strip it before learning.
const (
	Begin = "<metaclaw_context>"
	End   = "</metaclaw_context>"
)

// Strip removes every injected block from text. Unterminated blocks are cut
// to the end.
func Strip(text string) string {
	for {
		i := strings.Index(text, Begin)
		if i < 0 {
			return text
		}
		j := strings.Index(text[i:], End)
		if j < 0 {
			return strings.TrimRight(text[:i], " \n")
		}
		end := i + j + len(End)
		// The text on either side stays apart: a block between two
		// paragraphs must not glue their words together.
		before, after := strings.TrimRight(text[:i], " \n"), strings.TrimLeft(text[end:], " \n")
		switch {
		case strings.TrimSpace(before) == "":
			text = after
		case strings.TrimSpace(after) == "":
			text = before
		default:
			text = before + "\n\n" + after
		}
		if strings.TrimSpace(text) == "" {
			return ""
		}
	}
}
