// Package dashboard serves the local page that shows what the agent has
// learned and what it costs: a static single page embedded in the binary (no
// CDN, no framework) at /ui, and the JSON it reads. Skills and memory data
// come from their own routes (/v1/skills…, /v1/memory…), the same API the
// CLI and other tools use; this package adds activity and recent turns.
package dashboard

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
)

//go:embed static
var static embed.FS

// Public returns the page's routes (no data; served without auth so the
// browser can load it and then ask for the key when the proxy has one).
func Public() []route.Route {
	sub, _ := fs.Sub(static, "static")
	files := http.FileServer(http.FS(sub))
	page := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.StripPrefix("/ui", files).ServeHTTP(w, r)
	}
	return []route.Route{
		{Pattern: "GET /ui", Handler: func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusFound) }},
		{Pattern: "GET /ui/", Handler: page},
	}
}

// Routes returns the dashboard's data routes (behind the proxy's auth).
func Routes(st store.Store, c *core.Core) []route.Route {
	return []route.Route{
		{Pattern: "GET /v1/activity", Handler: func(w http.ResponseWriter, r *http.Request) {
			days, _ := strconv.Atoi(r.URL.Query().Get("days"))
			if days <= 0 || days > 366 {
				days = 30
			}
			since := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -days+1)
			buckets, err := st.Activity(r.Context(), since)
			if err != nil {
				writeErr(w, http.StatusInternalServerError, err)
				return
			}
			usage, err := st.UsageByPurpose(r.Context())
			if err != nil {
				writeErr(w, http.StatusInternalServerError, err)
				return
			}
			if buckets == nil {
				buckets = []store.ActivityBucket{}
			}
			writeJSON(w, map[string]any{"since": since.Format("2006-01-02"), "days": days, "buckets": buckets, "llm_usage": usage})
		}},
		{Pattern: "GET /v1/turns/recent", Handler: func(w http.ResponseWriter, r *http.Request) {
			limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
			turns, err := st.RecentTurns(r.Context(), limit)
			if err != nil {
				writeErr(w, http.StatusInternalServerError, err)
				return
			}
			if turns == nil {
				turns = []store.TurnSummary{}
			}
			writeJSON(w, map[string]any{"turns": turns})
		}},
		{Pattern: "GET /v1/tools", Handler: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"tools": c.Tools()})
		}},
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": err.Error(), "type": "api_error"}})
}
