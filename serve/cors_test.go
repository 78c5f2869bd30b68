package serve

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestCORSOrigins checks the origin policy over HTTP (the browser test checks what a browser makes of it):
// which origins are echoed, which are refused with 403 before the route runs, the preflight's answer, "*"
// and the extra origins of Options.CORSOrigins, and that credentials are never allowed.
func TestCORSOrigins(t *testing.T) {
	path := storiesPath(t)
	def := newTestServer(t, path, AdmitOptions{}, Options{APIKey: "k"})
	extra := newTestServer(t, path, AdmitOptions{}, Options{APIKey: "k", CORSOrigins: []string{"https://ui.example:3000", "http://192.168.1.*:8000"}})
	anyOrigin := newTestServer(t, path, AdmitOptions{}, Options{APIKey: "k", CORSOrigins: []string{"*"}})
	cases := []struct {
		name   string
		ts     *testServer
		method string
		path   string
		origin string
		status int
		acao   string // Access-Control-Allow-Origin wanted ("" none)
	}{
		{"http://localhost with a port is echoed", def, "GET", "/v1/models", "http://localhost:5173", 200, "http://localhost:5173"},
		{"https://127.0.0.1 without a port is echoed", def, "GET", "/v1/models", "https://127.0.0.1", 200, "https://127.0.0.1"},
		{"http://[::1] with a port is echoed", def, "GET", "/v1/models", "http://[::1]:8080", 200, "http://[::1]:8080"},
		{"http://0.0.0.0 is echoed", def, "GET", "/v1/models", "http://0.0.0.0:3000", 200, "http://0.0.0.0:3000"},
		{"an app:// origin is echoed", def, "GET", "/v1/models", "app://bankml-desktop", 200, "app://bankml-desktop"},
		{"a tauri:// origin is echoed", def, "GET", "/v1/models", "tauri://localhost", 200, "tauri://localhost"},
		{"another site is refused", def, "GET", "/bankml/ledger", "https://evil.example", 403, ""},
		{"another loopback address is refused", def, "GET", "/v1/models", "http://127.0.0.2:8080", 403, ""},
		{"a name that only starts like localhost is refused", def, "GET", "/v1/models", "http://localhost.evil.example", 403, ""},
		{"a port that is not a number is refused", def, "GET", "/v1/models", "http://localhost:evil.example", 403, ""},
		{"the null origin (sandboxed frames) is refused", def, "GET", "/v1/models", "null", 403, ""},
		{"a refused origin's POST never reaches the route", def, "POST", "/v1/completions", "https://evil.example", 403, ""},
		{"a refused origin's preflight is refused", def, "OPTIONS", "/v1/chat/completions", "https://evil.example", 403, ""},
		{"an allowed origin's preflight is answered before routing", def, "OPTIONS", "/v1/chat/completions", "http://localhost:3000", 200, "http://localhost:3000"},
		{"a preflight to an unknown path is answered", def, "OPTIONS", "/nope", "http://127.0.0.1:3000", 200, "http://127.0.0.1:3000"},
		{"a refused origin under /api/ gets Ollama's bare 403", def, "GET", "/api/tags", "https://evil.example", 403, ""},
		{"an extra exact origin is echoed", extra, "GET", "/v1/models", "https://ui.example:3000", 200, "https://ui.example:3000"},
		{"an extra exact origin on another port is refused", extra, "GET", "/v1/models", "https://ui.example:3001", 403, ""},
		{"an extra wildcard origin is echoed", extra, "GET", "/v1/models", "http://192.168.1.20:8000", 200, "http://192.168.1.20:8000"},
		{"the defaults stay with extra origins", extra, "GET", "/v1/models", "http://localhost:1", 200, "http://localhost:1"},
		{"* allows any origin with Access-Control-Allow-Origin: *", anyOrigin, "GET", "/v1/models", "https://evil.example", 200, "*"},
	}
	passed := 0
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, c.ts.url+c.path, strings.NewReader(`{"prompt": "a", "max_tokens": 1}`))
		req.Header.Set("Origin", c.origin)
		req.Header.Set("Authorization", "Bearer k")
		if c.method == http.MethodOptions {
			req.Header.Del("Authorization")
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h := resp.Header
		ok := resp.StatusCode == c.status && h.Get("Access-Control-Allow-Origin") == c.acao && h.Get("Access-Control-Allow-Credentials") == ""
		if c.acao != "" && c.acao != "*" && h.Get("Vary") != "Origin" {
			ok = false
		}
		if c.method == http.MethodOptions && c.status == 200 &&
			(h.Get("Access-Control-Allow-Methods") != corsMethods || h.Get("Access-Control-Allow-Headers") != "Authorization, *") {
			ok = false
		}
		if c.status == 403 {
			if strings.HasPrefix(c.path, "/api/") {
				ok = ok && len(body) == 0
			} else {
				ok = ok && strings.Contains(string(body), `"type":"permission_error"`) && strings.Contains(string(body), "--cors-origin")
			}
		}
		if !ok {
			t.Errorf("%s: %s %s Origin %s: %d %v %s; want %d, Access-Control-Allow-Origin %q, no credentials",
				c.name, c.method, c.path, c.origin, resp.StatusCode, h, body, c.status, c.acao)
			continue
		}
		passed++
	}
	t.Logf("CORS origins: %d of %d", passed, len(cases))
}

// TestHostCheck checks the DNS-rebinding guard: on a loopback connection (httptest listens on 127.0.0.1) the
// Host header must name loopback, localhost, this machine or an extra origin's host; else 403.
func TestHostCheck(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{CORSOrigins: []string{"http://my-box.lan:3000"}})
	cases := []struct {
		name   string
		host   string
		path   string
		status int
	}{
		{"the listen address", strings.TrimPrefix(ts.url, "http://"), "/v1/models", 200},
		{"localhost with a port", "localhost:8080", "/v1/models", 200},
		{"LOCALHOST in capitals", "LOCALHOST", "/v1/models", 200},
		{"a subdomain of localhost", "app.localhost:8080", "/v1/models", 200},
		{"another loopback address", "127.0.0.2:8080", "/v1/models", 200},
		{"IPv6 loopback", "[::1]:8080", "/v1/models", 200},
		{"the unspecified address", "0.0.0.0:8080", "/v1/models", 200},
		{"an extra origin's host", "my-box.lan:8080", "/v1/models", 200},
		{"an attacker's name", "rebind.evil.example:8080", "/v1/models", 403},
		{"an attacker's name on the history", "rebind.evil.example", "/bankml/ledger/proof?index=0", 403},
		{"an attacker's name ending in localhost without the dot", "evillocalhost:8080", "/v1/models", 403},
		{"an attacker's name under /api/", "rebind.evil.example", "/api/tags", 403},
		{"a public address", "93.184.216.34:8080", "/v1/models", 403},
		{"a private address (Ollama allows it, bankml does not)", "192.168.1.5:8080", "/v1/models", 403},
	}
	passed := 0
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodGet, ts.url+c.path, nil)
		req.Host = c.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ok := resp.StatusCode == c.status
		if c.status == 403 && !strings.HasPrefix(c.path, "/api/") {
			ok = ok && strings.Contains(string(body), "DNS rebinding")
		}
		if !ok {
			t.Errorf("%s: Host %s GET %s: %d %s, want %d", c.name, c.host, c.path, resp.StatusCode, body, c.status)
			continue
		}
		passed++
	}
	t.Logf("Host check: %d of %d", passed, len(cases))
}

// TestCORSOriginsRefused checks that New refuses a malformed extra origin, naming it.
func TestCORSOriginsRefused(t *testing.T) {
	for _, o := range []string{"evil.example", "http://a.example/path", "http://*.a.*", "://x", "http://user@host"} {
		if _, err := newOriginPolicy([]string{o}); err == nil || !strings.Contains(err.Error(), o) {
			t.Errorf("origin %q: error %v, want one naming it", o, err)
		}
	}
	for _, o := range []string{"*", "localhost", " https://ui.example ", "http://10.0.0.*:3000", ""} {
		if _, err := newOriginPolicy([]string{o}); err != nil {
			t.Errorf("origin %q: %v", o, err)
		}
	}
}
