package apiformat

// StreamTranslator turns one upstream stream into the client's format. It is
// stateful: use one per response, from one goroutine.
type StreamTranslator interface {
	// Translate returns zero or more client events for one upstream event.
	// It errors only on data that is not JSON; the stream may continue.
	Translate(ev Event) ([]Event, error)
	// Finish returns the events that close a stream whose upstream ended
	// without a terminal event, or nil when the stream is already closed.
	Finish() []Event
}

var doneData = []byte("[DONE]")

// doneEvent is OpenAI's end-of-stream marker; fresh each time because
// callers own the events they get.
func doneEvent() Event { return Event{Data: []byte("[DONE]")} }

const (
	blockNone = iota
	blockText
	blockThinking
	blockTool
)
