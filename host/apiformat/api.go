package apiformat

// API names a wire format: the one a client speaks or the one an upstream speaks.
type API string

// The two supported wire formats.
const (
	OpenAI    API = "openai"    // OpenAI Chat Completions
	Anthropic API = "anthropic" // Anthropic Messages
)

// ToolCall is one tool call a model made, in a format-neutral shape.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text; "{}" when the model sent no arguments
}

// Summary is what a completed response said, for recording. It is built the
// same way from a full body and from a stream, so the two can be compared.
type Summary struct {
	Text       string
	Reasoning  string
	ToolCalls  []ToolCall
	StopReason string // as the upstream said it (finish_reason or stop_reason)
	Model      string
	// InputTokens counts every prompt token, cached or not: for Anthropic it is
	// input_tokens + cache_read_input_tokens + cache_creation_input_tokens, which
	// is what OpenAI's prompt_tokens means.
	InputTokens  int
	OutputTokens int
	ID           string
}
