package skills

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/route"
)

// Routes is the skills API of the dashboard (behind the proxy's auth):
//
//	GET  /v1/skills                        skills without bodies; ?status=active|pending|disabled, ?q= ranks by relevance
//	GET  /v1/skills/search?q=…             what a turn saying q would get; &agent=, &limit=, &all=1
//	GET  /v1/skills/{name}                 one skill with its body and pending edit
//	GET  /v1/skills/{name}/history         its versions and decisions
//	POST /v1/skills/{name}/{action}        approve | reject | enable | disable ({"reason": …} for reject)
//
// The POST routes only accept same-origin JSON requests, so a web page the
// user visits cannot approve a skill through a browser (CSRF).
func Routes(lib *Library, p *Provider) []route.Route {
	return []route.Route{
		{Pattern: "GET /v1/skills", Handler: func(w http.ResponseWriter, r *http.Request) {
			status := r.URL.Query().Get("status")
			out := []map[string]any{}
			list := lib.List()
			if q := strings.TrimSpace(r.URL.Query().Get("q")); q != "" {
				hits, err := lib.Search(r.Context(), SearchOptions{Texts: []string{q}, Limit: 100, All: true})
				if err != nil {
					writeError(w, http.StatusInternalServerError, err.Error())
					return
				}
				list = list[:0]
				for _, h := range hits {
					list = append(list, h.Skill)
				}
			}
			for _, s := range list {
				if status != "" && s.Status != status {
					continue
				}
				out = append(out, summary(s))
			}
			writeJSON(w, http.StatusOK, map[string]any{"skills": out, "active": lib.ActiveCount(), "problems": lib.Problems()})
		}},
		{Pattern: "GET /v1/skills/search", Handler: func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			agent := q.Get("agent")
			if agent == "" {
				agent = r.PathValue("agent")
			}
			limit, _ := strconv.Atoi(q.Get("limit"))
			if limit <= 0 || limit > 50 {
				limit = 6
			}
			o := SearchOptions{Texts: []string{q.Get("q")}, Agent: agent, Limit: limit, All: q.Get("all") == "1"}
			if p != nil {
				o.Mode, o.Embedder = p.o.Mode, p.o.Embedder
			}
			hits, err := lib.Search(r.Context(), o)
			var semErr *SemanticError
			if err != nil && !errors.As(err, &semErr) {
				writeError(w, http.StatusInternalServerError, err.Error())
				return
			}
			out := []map[string]any{}
			for _, h := range hits {
				m := summary(h.Skill)
				m["score"], m["keyword"], m["semantic"] = h.Score, h.Keyword, h.Semantic
				out = append(out, m)
			}
			writeJSON(w, http.StatusOK, map[string]any{"query": q.Get("q"), "match": BuildMatch(o.Texts), "hits": out})
		}},
		{Pattern: "GET /v1/skills/{name}", Handler: func(w http.ResponseWriter, r *http.Request) {
			name := r.PathValue("name")
			s, ok := lib.Get(name)
			if !ok {
				writeError(w, http.StatusNotFound, "no skill named "+strings.TrimSpace(name))
				return
			}
			m := summary(s)
			m["body"], m["path"] = s.Body, s.Path
			if s.HasProposal {
				if prop, err := lib.Proposal(name); err == nil {
					m["proposal"] = map[string]any{"description": prop.Description, "body": prop.Body, "tags": prop.Tags, "generation": prop.Generation}
				}
			}
			writeJSON(w, http.StatusOK, m)
		}},
		{Pattern: "GET /v1/skills/{name}/history", Handler: func(w http.ResponseWriter, r *http.Request) {
			hist, err := lib.History(r.Context(), r.PathValue("name"), 100, false)
			if err != nil {
				writeError(w, http.StatusInternalServerError, err.Error())
				return
			}
			if hist == nil {
				hist = []HistoryEntry{}
			}
			writeJSON(w, http.StatusOK, map[string]any{"history": hist})
		}},
		{Pattern: "POST /v1/skills/{name}/{action}", Handler: func(w http.ResponseWriter, r *http.Request) {
			if why := crossSite(r); why != "" {
				writeError(w, http.StatusForbidden, why)
				return
			}
			name, action := r.PathValue("name"), r.PathValue("action")
			var body struct {
				Reason string `json:"reason"`
			}
			_ = json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&body)
			ev := Event{Source: "api"}
			var err error
			switch action {
			case "approve":
				_, err = lib.Approve(r.Context(), name, ev)
			case "reject":
				err = lib.Reject(r.Context(), name, body.Reason, ev)
			case "enable":
				_, err = lib.SetStatus(r.Context(), name, StatusActive, ev)
			case "disable":
				_, err = lib.SetStatus(r.Context(), name, StatusDisabled, ev)
			default:
				writeError(w, http.StatusNotFound, "unknown action "+action+" (approve, reject, enable, disable)")
				return
			}
			switch {
			case errors.Is(err, ErrNotFound):
				writeError(w, http.StatusNotFound, err.Error())
			case err != nil:
				writeError(w, http.StatusConflict, err.Error())
			default:
				out := map[string]any{"ok": true}
				if s, ok := lib.Get(name); ok {
					out["skill"] = summary(s)
				}
				writeJSON(w, http.StatusOK, out)
			}
		}},
	}
}

// crossSite refuses state changes a browser could send from another site:
// they must be JSON (a cross-origin JSON POST needs a CORS preflight the
// proxy never grants) and not carry a foreign Origin.
func crossSite(r *http.Request) string {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		return "send Content-Type: application/json"
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "cross-site request refused"
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			return "cross-origin request refused"
		}
	} else if o == "null" {
		return "cross-origin request refused"
	}
	return ""
}

func summary(s *Skill) map[string]any {
	return map[string]any{
		"id": s.ID(), "name": s.Name, "description": s.Description, "category": s.Category, "tags": s.Tags,
		"agents": s.Agents, "status": s.Status, "generation": s.Generation, "source": s.Source,
		"has_proposal": s.HasProposal, "updated": s.Updated,
	}
}

// writeError answers with the error object of every other route (OpenAI's
// shape: {"error":{"message","type",…}}), so one client handles them all.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(apiformat.ErrorBody(apiformat.OpenAI, status, msg))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
