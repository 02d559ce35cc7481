// Package route is the type every part of the host uses to offer an HTTP
// endpoint (memory, skills, dashboard, scheduler, training). The proxy
// serves them behind its auth; the parts need not import the proxy.
package route

import "net/http"

// Route is an extra endpoint. Pattern is a ServeMux pattern such as
// "GET /v1/memory/search"; the handler can read r.PathValue("agent").
type Route struct {
	Pattern string
	Handler http.HandlerFunc
}
