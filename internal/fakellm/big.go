package fakellm

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strconv"
)

// bigRe asks for a generated answer of that many MiB ("BIG-1024MB"):
// OpenAI format, streamed as 1 MiB events or written as one JSON body,
// produced on the fly and never held in memory.
var bigRe = regexp.MustCompile(`BIG-(\d+)MB`)

// bigChunk is 1 MiB of answer text.
var bigChunk = bytes.Repeat([]byte("a"), 1<<20)

// BigAnswerBytes is the size of the text of a BIG-<n>MB answer.
func BigAnswerBytes(mb int) int64 { return int64(mb) << 20 }

func bigMB(lastUser string) int {
	m := bigRe.FindStringSubmatch(lastUser)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func (s *Server) openaiBig(w http.ResponseWriter, r *http.Request, mb int, stream bool) {
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		head := []byte(`data: {"id":"chatcmpl-big","object":"chat.completion.chunk","created":1764472580,"model":"fake","choices":[{"index":0,"delta":{"content":"`)
		tail := []byte("\"},\"finish_reason\":null}]}\n\n")
		for i := 0; i < mb; i++ {
			for _, b := range [][]byte{head, bigChunk, tail} {
				if _, err := w.Write(b); err != nil {
					return
				}
			}
			flush(w)
		}
		io.WriteString(w, `data: {"id":"chatcmpl-big","object":"chat.completion.chunk","created":1764472580,"model":"fake","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`+"\n\ndata: [DONE]\n\n")
		flush(w)
		return
	}
	head := `{"id":"chatcmpl-big","object":"chat.completion","created":1764472580,"model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":"`
	tail := `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.FormatInt(int64(len(head)+len(tail))+BigAnswerBytes(mb), 10))
	w.WriteHeader(200)
	io.WriteString(w, head)
	for i := 0; i < mb; i++ {
		if _, err := w.Write(bigChunk); err != nil {
			return
		}
	}
	io.WriteString(w, tail)
}
