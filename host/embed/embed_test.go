package embed

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHTTPEmbedder(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad", 400)
			return
		}
		var req struct{ Input []string }
		json.NewDecoder(r.Body).Decode(&req)
		var data []map[string]any
		for i := len(req.Input) - 1; i >= 0; i-- { // out of order on purpose
			data = append(data, map[string]any{"index": i, "embedding": []float32{float32(i + 1), 0, 0}})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data, "usage": map[string]int{"prompt_tokens": 3}})
	}))
	defer srv.Close()
	e := &HTTP{Base: srv.URL + "/v1", Key: "k", Model: "emb"}
	vecs, err := e.Embed(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || vecs[0][0] != 1 || vecs[1][0] != 1 {
		t.Fatalf("vectors %v", vecs) // normalised: both unit along x
	}
	bad := &HTTP{Base: srv.URL + "/v1", Key: "wrong", Model: "emb"}
	if _, err := bad.Embed(context.Background(), []string{"a"}); err == nil {
		t.Fatal("error expected")
	}
}

func TestEncodeDecodeDot(t *testing.T) {
	v := Normalize([]float32{3, 4})
	if math.Abs(float64(v[0])-0.6) > 1e-6 || math.Abs(float64(Dot(v, v))-1) > 1e-6 {
		t.Fatalf("normalize %v", v)
	}
	got := Decode(Encode(v))
	if len(got) != 2 || got[0] != v[0] || got[1] != v[1] {
		t.Fatalf("round trip %v", got)
	}
	if Dot([]float32{1}, []float32{1, 2}) != 0 {
		t.Fatal("length mismatch must be 0")
	}
}
