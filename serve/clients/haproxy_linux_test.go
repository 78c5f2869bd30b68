package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/testdata"
)

// haproxyPath finds the haproxy binary (scripts/install-haproxy.sh installs Debian's package).
func haproxyPath(t *testing.T) string {
	for _, p := range []string{"haproxy", "/usr/sbin/haproxy"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	testdata.Absent(t, "haproxy is not installed (scripts/install-haproxy.sh installs it)")
	return ""
}

// haproxyConfig is the load balancer in front of the replicas: health checks on /health (a replica answers
// it only once its model is admitted), routing by a hash of the X-Conversation-Id header (consistent
// hashing: one conversation goes to one replica, whose slots then reuse its cached prefix; a replica's
// death moves only its own conversations), and layer-7 retries on another replica for a request whose
// replica died before answering (HAProxy buffers the request body to be able to retry it).
func haproxyConfig(listen string, replicas []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn 256
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout check 5s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response junk-response response-timeout
    option http-buffer-request
frontend api
    bind %s
    default_backend replicas
backend replicas
    balance hdr(X-Conversation-Id)
    hash-type consistent
    option httpchk GET /health
    http-check expect status 200
    http-response set-header X-Replica %%s
`, listen)
	for i, r := range replicas {
		// a check slow under load is not a dead replica (timeout check 5s); three refused in a row are
		fmt.Fprintf(&b, "    server r%d %s check inter 200ms fall 3 rise 2\n", i, strings.TrimPrefix(r, "http://"))
	}
	return b.String()
}

// lbAnswer is one completion as the client saw it.
type lbAnswer struct {
	text    string
	replica string
	status  int
	err     error
}

func complete(client *http.Client, base string, conv, turn int) lbAnswer {
	body := fmt.Sprintf(`{"prompt":"Conversation %d, turn %d. Once upon a time","max_tokens":24,"temperature":0}`, conv, turn)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Conversation-Id", fmt.Sprintf("conv-%d", conv))
	resp, err := client.Do(req)
	if err != nil {
		return lbAnswer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a := lbAnswer{status: resp.StatusCode, replica: resp.Header.Get("X-Replica"), err: err}
	var out struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err == nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &out); err != nil || len(out.Choices) != 1 {
			a.err = fmt.Errorf("lbAnswer %s: %v", b, err)
		} else {
			a.text = out.Choices[0].Text
		}
	} else if err == nil {
		a.err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return a
}

// TestThreeReplicasBehindHAProxyLoseNoRequestThroughAKill runs three bankml serve replicas of stories260K
// behind HAProxy (health checks, sticky routing by conversation, layer-7 retries) under a bounded load
// (4 clients, 8 conversations, 48 requests), kills one replica with SIGKILL mid-run, and checks that every
// request was answered 200 with exactly its single-request lbAnswer (temperature 0, taken beforehand from a
// replica directly), and that a conversation whose replica lived stayed on that replica.
func TestThreeReplicasBehindHAProxyLoseNoRequestThroughAKill(t *testing.T) {
	haproxy := haproxyPath(t)
	model := testdata.Model(t, "stories260K.gguf")
	var reps []*serveProcess
	var urls []string
	for range 3 {
		p := startServe(t, model, "-t", "1", "-np", "2")
		reps = append(reps, p)
		urls = append(urls, p.URL)
	}
	const convs, turns = 8, 6
	client := &http.Client{Timeout: 2 * time.Minute}

	// Single-request answers, from one replica directly.
	want := map[[2]int]string{}
	for c := range convs {
		for turn := range turns {
			a := complete(client, reps[0].URL, c, turn)
			if a.err != nil {
				t.Fatalf("single request %d/%d: %v", c, turn, a.err)
			}
			want[[2]int{c, turn}] = a.text
		}
	}

	listen := freePort(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(listen, urls)), 0o644); err != nil {
		t.Fatal(err)
	}
	var hlog bytes.Buffer
	h := exec.Command(haproxy, "-f", cfg, "-db")
	h.Stdout, h.Stderr = &syncWriter{w: &hlog}, &syncWriter{w: &hlog}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	hdone := make(chan error, 1)
	go func() { hdone <- h.Wait() }()
	t.Cleanup(func() {
		_ = h.Process.Signal(syscall.SIGKILL)
		<-hdone
	})
	base := "http://" + listen
	deadline := time.Now().Add(30 * time.Second)
	for { // HAProxy up, with its checks passed
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not lbAnswer /health in 30 s: %v\n%s", err, hlog.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(600 * time.Millisecond) // every server's rise (2 checks at 200 ms)

	// The load: 4 clients take the 48 requests in turn order; one replica dies after a third of them.
	type job struct{ conv, turn int }
	jobs := make(chan job)
	var mu sync.Mutex
	var got []struct {
		job
		lbAnswer
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				a := complete(client, base, j.conv, j.turn)
				mu.Lock()
				got = append(got, struct {
					job
					lbAnswer
				}{j, a})
				mu.Unlock()
			}
		}()
	}
	killed := -1
	n := 0
	for turn := range turns {
		for c := range convs {
			if n == convs*turns/3 {
				// Kill the replica that served conversation 0 so far.
				mu.Lock()
				victim := ""
				for _, g := range got {
					if g.conv == 0 && g.replica != "" {
						victim = g.replica
					}
				}
				mu.Unlock()
				if victim == "" {
					victim = "r1"
				}
				fmt.Sscanf(victim, "r%d", &killed)
				_ = reps[killed].cmd.Process.Signal(syscall.SIGKILL)
				t.Logf("killed replica %s (%s) after %d requests were handed out", victim, reps[killed].URL, n)
			}
			jobs <- job{c, turn}
			n++
		}
	}
	close(jobs)
	wg.Wait()

	if len(got) != convs*turns {
		t.Fatalf("%d answers for %d requests", len(got), convs*turns)
	}
	equal, ok := 0, 0
	before := map[int]map[string]bool{} // conversation -> replicas that answered it
	for _, g := range got {
		if g.err != nil || g.status != http.StatusOK {
			t.Errorf("conversation %d turn %d: lost: status %d, %v", g.conv, g.turn, g.status, g.err)
			continue
		}
		ok++
		if g.text == want[[2]int{g.conv, g.turn}] {
			equal++
		} else {
			t.Errorf("conversation %d turn %d: %q, single-request lbAnswer %q", g.conv, g.turn, g.text, want[[2]int{g.conv, g.turn}])
		}
		if before[g.conv] == nil {
			before[g.conv] = map[string]bool{}
		}
		before[g.conv][g.replica] = true
	}
	t.Logf("%d of %d requests answered 200; %d of %d equal to their single-request answers", ok, convs*turns, equal, convs*turns)
	// Stickiness: a conversation whose replica survived was answered by that replica only (its cache is
	// there). One whose replica died goes where HAProxy sends it: redispatched retries while the replica's
	// checks fail, then the consistent hash's next replica.
	dead := fmt.Sprintf("r%d", killed)
	for c, rs := range before {
		if !rs[dead] && len(rs) != 1 {
			t.Errorf("conversation %d was answered by %d replicas (%v) though its replica lived", c, len(rs), rs)
		}
	}
	if t.Failed() {
		t.Logf("haproxy log:\n%s", hlog.String())
	}
}
