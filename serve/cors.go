package serve

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
)

// The server's cross-origin policy follows Ollama v0.17.4 (envconfig.AllowedOrigins, gin-contrib/cors with
// AllowWildcard, server/routes.go's allowedHostsMiddleware), not llama-server's default (which echoes any
// Origin with credentials): a browser page may read answers only from the origins below, and a request that
// arrived on a loopback address must name a loopback host (the DNS-rebinding guard).

// loopbackOriginHosts are the hosts of the default http(s) origins, any port or none: Ollama's localhost,
// 127.0.0.1 and 0.0.0.0, and IPv6's loopback [::1].
var loopbackOriginHosts = []string{"localhost", "127.0.0.1", "::1", "0.0.0.0"}

// appOriginSchemes are the schemes whose every origin is allowed by default: desktop shells that load their
// pages from the app itself (Electron's app://, file://, Tauri's tauri://, VS Code's webviews), Ollama's list.
var appOriginSchemes = []string{"app", "file", "tauri", "vscode-webview", "vscode-file"}

// originPolicy is the set of allowed origins: the defaults above and the extra ones (Options.CORSOrigins).
type originPolicy struct {
	any      bool            // "*" was given: every origin, answered with Access-Control-Allow-Origin: *
	exact    map[string]bool // extra origins without a wildcard, lower-cased
	wildcard [][2]string     // extra origins with one "*": prefix and suffix, lower-cased (gin-contrib's AllowWildcard)
	hosts    map[string]bool // the host names of the exact extra origins, which the Host check accepts too
	hostname string          // this machine's host name (os.Hostname), lower-cased; "" when unknown
}

// newOriginPolicy validates the extra origins: "*" (any origin), llama-server's special value "localhost"
// (its loopback-only mode, which the defaults already are), or SCHEME://HOST[:PORT] with at most one "*"
// standing for any text (http://192.168.1.*:3000, https://*.example.com). Anything else is an error naming
// the value.
func newOriginPolicy(extra []string) (*originPolicy, error) {
	p := &originPolicy{exact: map[string]bool{}, hosts: map[string]bool{}}
	if h, err := os.Hostname(); err == nil {
		p.hostname = strings.ToLower(h)
	}
	for _, o := range extra {
		o = strings.ToLower(strings.TrimSpace(o))
		switch {
		case o == "":
			continue
		case o == "*":
			p.any = true
			continue
		case o == "localhost":
			continue
		}
		scheme, rest, ok := strings.Cut(o, "://")
		if !ok || scheme == "" || strings.ContainsAny(rest, "/?#@") {
			return nil, fmt.Errorf("CORS origin %q: want * or SCHEME://HOST[:PORT] (no path), e.g. http://192.168.1.5:3000", o)
		}
		switch strings.Count(o, "*") {
		case 0:
			p.exact[o] = true
			if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
				p.hosts[u.Hostname()] = true
			}
		case 1:
			pre, suf, _ := strings.Cut(o, "*")
			p.wildcard = append(p.wildcard, [2]string{pre, suf})
		default:
			return nil, fmt.Errorf("CORS origin %q: at most one * (any text) per origin", o)
		}
	}
	return p, nil
}

// allowed reports whether a page of origin (an Origin header) may read the server's answers.
func (p *originPolicy) allowed(origin string) bool {
	if p.any {
		return true
	}
	o := strings.ToLower(origin)
	if isLoopbackOrigin(o) || p.exact[o] {
		return true
	}
	for _, s := range appOriginSchemes {
		if strings.HasPrefix(o, s+"://") {
			return true
		}
	}
	for _, w := range p.wildcard {
		if len(o) >= len(w[0])+len(w[1]) && strings.HasPrefix(o, w[0]) && strings.HasSuffix(o, w[1]) {
			return true
		}
	}
	return false
}

// isLoopbackOrigin reports whether origin (lower-cased) is http:// or https:// with a host of
// loopbackOriginHosts and no port or a numeric one, and nothing else (an origin has no path).
func isLoopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	if port := u.Port(); port != "" {
		for _, c := range port {
			if c < '0' || c > '9' {
				return false
			}
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return false
	}
	for _, h := range loopbackOriginHosts {
		if u.Hostname() == h {
			return true
		}
	}
	return false
}

// allowedHost reports whether host (a Host header's name or address, without its port) may be asked on a
// connection that arrived on a loopback address: a loopback or unspecified IP address (127.0.0.0/8, ::1,
// 0.0.0.0, ::), localhost and its subdomains (RFC 6761 §6.3: browsers resolve them to loopback
// themselves), this machine's host name, or the host of an exact extra origin. Any other name may be an
// attacker's domain rebound to 127.0.0.1 (DNS rebinding), whose pages are same-origin with the server.
// Ollama's allowedHost also accepts private addresses and the .local and .internal domains: bankml does
// not (a name on the local network can be answered for by any machine there).
func (p *originPolicy) allowedHost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "" { // HTTP/1.0 without a Host header: no browser sends it
		return true
	}
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return a.IsLoopback() || a.IsUnspecified() || (a.Is4In6() && (a.Unmap().IsLoopback() || a.Unmap().IsUnspecified()))
	}
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || (p.hostname != "" && h == p.hostname) || p.hosts[h]
}

// CORS answers of llama-server's pre-routing handler (server-http.cpp) for an allowed origin: its methods
// and headers. "Authorization" is named because the "*" wildcard does not cover it (Fetch standard, CORS
// protocol), so that a page's fetch with an API key passes its preflight.
const (
	corsMethods = "GET, POST, DELETE, OPTIONS"
	corsHeaders = "Authorization, *"
)

// GuardOptions configure Guards.
type GuardOptions struct {
	CORSOrigins []string            // the extra allowed origins (Options.CORSOrigins: --cors-origin, BANKML_ORIGINS)
	APIKey      string              // the API key (Options.APIKey: --api-key); "": none checked
	Log         *slog.Logger        // each refused origin or host is logged as a warning; nil: discard
	Refused     func(reason string) // counts a refused request ("origin" or "host"); nil: not counted
}

// Guards is what a server checks before it routes, in this order: the DNS-rebinding guard (checkHost), the
// cross-origin policy with its preflight answer (cors), then the API key (RequireAPIKey). The single-model
// server and the store server (package storeserve, `bankml serve` without a model) both put it in front of
// their routes, so that both answer a page of another site, a rebound Host and a preflight alike. A request
// the store server forwards to a model's server passes that server's Guards again, under the same options:
// it passes them again, and cors does not repeat its headers. The error names a malformed extra origin.
func Guards(o GuardOptions) (func(http.Handler) http.Handler, error) {
	origins, err := newOriginPolicy(o.CORSOrigins)
	if err != nil {
		return nil, err
	}
	g := &guard{origins: origins, log: o.Log, refused: o.Refused}
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if g.refused == nil {
		g.refused = func(string) {}
	}
	key := RequireAPIKey(o.APIKey)
	return func(next http.Handler) http.Handler { return g.checkHost(g.cors(key(next))) }, nil
}

// guard holds Guards' policy: who may read answers cross-origin and which Host names a loopback connection
// may ask.
type guard struct {
	origins *originPolicy
	log     *slog.Logger
	refused func(reason string)
}

// cors is the CORS handling, before the API key and the routes. A request without Origin passes. A request
// from an origin the policy refuses gets 403 before anything runs (as gin-contrib/cors answers Ollama's
// routes: a page cannot have a completion generated or read anything, even with a "simple" request that has
// no preflight). An allowed origin is echoed in Access-Control-Allow-Origin (with Vary: Origin, once; "*"
// when every origin is allowed) and never with Access-Control-Allow-Credentials: bankml has no cookies, and a
// wildcard with credentials would let any page read the answers. An OPTIONS request to any path is a
// preflight answered at once, whatever the route and without the API key, as llama-server answers it: 200,
// an empty text/html body, -Allow-Methods and -Allow-Headers as corsMethods and corsHeaders.
func (g *guard) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if o := r.Header.Get("Origin"); o != "" {
			if !g.origins.allowed(o) {
				g.refused("origin")
				g.log.Warn("refused a cross-origin request", "origin", o, "path", r.URL.Path)
				forbid(w, r, fmt.Sprintf("origin %q may not use this server: bankml serve answers pages from loopback origins "+
					"(http://localhost, 127.0.0.1, [::1] on any port) and app origins only; add origins with --cors-origin or BANKML_ORIGINS", o))
				return
			}
			if !slices.Contains(h.Values("Vary"), "Origin") {
				h.Add("Vary", "Origin")
			}
			if g.origins.any {
				h.Set("Access-Control-Allow-Origin", "*")
			} else {
				h.Set("Access-Control-Allow-Origin", o)
			}
		}
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", corsMethods)
			h.Set("Access-Control-Allow-Headers", corsHeaders)
			h.Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusOK)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkHost is the DNS-rebinding guard: a request that arrived on a loopback address (the server listens on
// loopback, or on every interface and was reached through loopback) must name an allowed host in its Host
// header (originPolicy.allowedHost), else 403, as Ollama's allowedHostsMiddleware refuses it. Requests that
// arrived on another address pass (a server exposed to the network is reached by whatever name the network
// gives it; --api-key guards it).
func (g *guard) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopbackAddr(local) {
			host, _, err := net.SplitHostPort(r.Host)
			if err != nil {
				host = r.Host
			}
			if !g.origins.allowedHost(host) {
				g.refused("host")
				g.log.Warn("refused a request naming another host on a loopback connection (DNS rebinding guard)", "host", r.Host, "path", r.URL.Path)
				forbid(w, r, fmt.Sprintf("Host %q is not allowed on a loopback server (DNS rebinding guard): use localhost or the listen address, "+
					"or add the name with --cors-origin http://NAME:PORT", r.Host))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopbackAddr reports whether a connection's local address is a loopback IP address.
func isLoopbackAddr(a net.Addr) bool {
	var ip net.IP
	switch v := a.(type) {
	case *net.TCPAddr:
		ip = v.IP
	default:
		if h, _, err := net.SplitHostPort(a.String()); err == nil {
			ip = net.ParseIP(h)
		}
	}
	return ip != nil && ip.IsLoopback()
}

// forbid answers a refused origin or host with 403: under /api/ as Ollama answers it (gin's AbortWithStatus:
// no body), elsewhere with llama-server's error body (permission_error) saying why.
func forbid(w http.ResponseWriter, r *http.Request, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	writeError(w, &APIError{Type: TypePermission, Message: msg})
}

// CheckCORSOrigins reports the first malformed origin of Options.CORSOrigins, as New would refuse it: a
// command checks its flags with it before admitting the model.
func CheckCORSOrigins(origins []string) error {
	_, err := newOriginPolicy(origins)
	return err
}
