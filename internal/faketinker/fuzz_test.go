package faketinker

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

var fuzzPaths = []string{"create_session", "session_heartbeat", "client/config", "create_model", "get_info", "forward_backward",
	"forward", "optim_step", "save_weights", "save_weights_for_sampler", "load_weights", "unload_model",
	"create_sampling_session", "asample", "retrieve_future", "weights_info"}

// FuzzRequests: any body on any endpoint gets an answer below 500 (bad
// input is the client's error, never a crash of the server).
func FuzzRequests(f *testing.F) {
	f.Add(uint8(5), []byte(`{"forward_backward_input":{"data":[{"model_input":{"chunks":[{"tokens":[1]}]},"loss_fn_inputs":{"target_tokens":{"data":[2],"dtype":"int64"},"logprobs":{"data":[0],"dtype":"float32"},"advantages":{"data":[1],"dtype":"float32"}}}],"loss_fn":"ppo"},"model_id":"m","seq_id":1}`))
	f.Add(uint8(13), []byte(`{"prompt":{"chunks":[{"tokens":[1,2]}]},"sampling_params":{"max_tokens":3,"stop":[1]},"base_model":"toy","num_samples":2}`))
	f.Add(uint8(3), []byte(`{"session_id":"x","model_seq_id":0,"base_model":"toy","lora_config":{"rank":4}}`))
	s := New(Options{LongPoll: 1})
	defer s.Close()
	f.Fuzz(func(t *testing.T, p uint8, body []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/api/v1/"+fuzzPaths[int(p)%len(fuzzPaths)], bytes.NewReader(body))
		req.Header.Set("X-API-Key", "k")
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s: %d %s", fuzzPaths[int(p)%len(fuzzPaths)], rec.Code, rec.Body)
		}
	})
}
