package clients

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bankml/bankml/ledger"
)

// loadRequest is one distinct request of the load test: a route and its
// exact body.
type loadRequest struct {
	path string
	body []byte
}

// loadAnswer is what a client received: the status, the answer's text and
// token count, and the receipt's hashes.
type loadAnswer struct {
	status   int
	text     string
	tokens   int
	finish   string
	request  string // receipt request_sha256
	response string // receipt response_sha256
	err      string
}

func (a loadAnswer) same(b loadAnswer) bool {
	return a.status == b.status && a.text == b.text && a.tokens == b.tokens && a.finish == b.finish
}

// loadRequests are the distinct requests, over the Ollama and OpenAI routes,
// greedy and seeded, streamed and not, with prompts that share prefixes (so
// that slots reuse cached tokens across requests).
func loadRequests(model string) []loadRequest {
	var rs []loadRequest
	prompts := []string{"Once upon a time", "Once upon a time there was", "The little dog", "Lily and Tom"}
	for i, p := range prompts {
		stream := i%2 == 0
		rs = append(rs,
			loadRequest{"/api/generate", fmt.Appendf(nil, `{"model":%q,"prompt":%q,"stream":%v,"options":{"temperature":0,"num_predict":24}}`, model, p, stream)},
			loadRequest{"/api/generate", fmt.Appendf(nil, `{"model":%q,"prompt":%q,"stream":%v,"options":{"seed":%d,"num_predict":24}}`, model, p, !stream, i+1)},
			loadRequest{"/v1/completions", fmt.Appendf(nil, `{"model":%q,"prompt":%q,"temperature":0.9,"seed":%d,"max_tokens":24}`, model, p, 10+i)},
		)
	}
	// A prompt past repeat_last_n (64), with penalties: the penalty history
	// must not depend on what the slot cached before.
	long := strings.Repeat("Once upon a time there was a little girl named Lily. ", 8)
	rs = append(rs,
		loadRequest{"/api/generate", fmt.Appendf(nil, `{"model":%q,"prompt":%q,"stream":false,"options":{"seed":9,"repeat_penalty":1.2,"presence_penalty":0.6,"frequency_penalty":0.4,"num_predict":24}}`, model, long)},
		loadRequest{"/api/chat", fmt.Appendf(nil, `{"model":%q,"messages":[{"role":"user","content":"Tell me a story."}],"stream":true,"options":{"temperature":0,"num_predict":16}}`, model)},
		loadRequest{"/v1/chat/completions", fmt.Appendf(nil, `{"model":%q,"messages":[{"role":"user","content":"Tell me a story."}],"seed":3,"max_tokens":16}`, model)},
	)
	return rs
}

// send posts r and reads the answer: Ollama's NDJSON or JSON, OpenAI's JSON.
func send(c *http.Client, base string, r loadRequest) loadAnswer {
	resp, err := c.Post(base+r.path, "application/json", bytes.NewReader(r.body))
	if err != nil {
		return loadAnswer{err: err.Error()}
	}
	defer resp.Body.Close()
	a := loadAnswer{status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		a.err = string(b)
		return a
	}
	type receipt struct {
		RequestSHA256  string `json:"request_sha256"`
		ResponseSHA256 string `json:"response_sha256"`
	}
	var rc *receipt
	if strings.HasPrefix(r.path, "/api/") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var text strings.Builder
		for sc.Scan() {
			var line struct {
				Response   string `json:"response"`
				Message    struct{ Content string }
				Done       bool     `json:"done"`
				DoneReason string   `json:"done_reason"`
				EvalCount  int      `json:"eval_count"`
				Error      string   `json:"error"`
				Receipt    *receipt `json:"bankml_receipt"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				a.err = fmt.Sprintf("line %q: %v", sc.Bytes(), err)
				return a
			}
			if line.Error != "" {
				a.err = line.Error
				return a
			}
			text.WriteString(line.Response + line.Message.Content)
			if line.Done {
				a.tokens, a.finish, rc = line.EvalCount, line.DoneReason, line.Receipt
			}
		}
		if err := sc.Err(); err != nil {
			a.err = err.Error()
		}
		a.text = text.String()
	} else {
		var out struct {
			Choices []struct {
				Text         string `json:"text"`
				Message      struct{ Content string }
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Receipt *receipt `json:"bankml_receipt"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 {
			a.err = fmt.Sprintf("answer: %v", err)
			return a
		}
		ch := out.Choices[0]
		a.text, a.tokens, a.finish, rc = ch.Text+ch.Message.Content, out.Usage.CompletionTokens, ch.FinishReason, out.Receipt
	}
	if rc == nil {
		a.err = "no bankml_receipt"
		return a
	}
	a.request, a.response = rc.RequestSHA256, rc.ResponseSHA256
	return a
}

// ledgerVerify runs `bankml ledger verify DIR` and returns its report.
func ledgerVerify(t *testing.T, dir string) ledger.Report {
	t.Helper()
	cmd := exec.Command(bankmlBinary(t), "ledger", "verify", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bankml ledger verify %s: %v\n%s%s", dir, err, out, stderr.String())
	}
	var v struct {
		OK bool `json:"ok"`
		ledger.Report
	}
	if err := json.Unmarshal(out, &v); err != nil || !v.OK {
		t.Fatalf("bankml ledger verify %s: %s (%v)", dir, out, err)
	}
	return v.Report
}

// TestLoadTwoHundredRequestsLoseNothing is the load test of issue 7: 200
// requests, 8 at a time, from this process to a `bankml serve --parallel 2
// --queue 5 --history DIR` process on stories260K over loopback (8 clients
// and room for 7: the queue overflows). Every attempt is answered (200) or
// refused with 429 (Ollama's routes: Ollama's 503 server busy) (counted; the client backs off and retries, so every
// request is answered in the end); every answer equals the single-request
// answer of its request (sent alone before the load); after a graceful stop
// (SIGTERM) `bankml ledger verify DIR` passes and the ledger has exactly one
// line per answer, each with the request and response hashes the client's
// receipt named. It prints answers/s, p50/p99 latency and the error count.
func TestLoadTwoHundredRequestsLoseNothing(t *testing.T) {
	const total, concurrent = 200, 8
	dir := t.TempDir()
	srv := startServe(t, stories(t), "-t", "1", "--parallel", "2", "--queue", "5", "--history", dir)
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	getJSON(t, srv.URL+"/v1/models", &models)
	reqs := loadRequests(models.Data[0].ID)
	client := &http.Client{Timeout: 2 * time.Minute}

	// Each request's single-request answer, one at a time.
	single := make([]loadAnswer, len(reqs))
	for i, r := range reqs {
		if single[i] = send(client, srv.URL, r); single[i].status != http.StatusOK || single[i].err != "" {
			t.Fatalf("%s %s alone: %d %s", r.path, r.body, single[i].status, single[i].err)
		}
	}

	// The load: a bounded loop of total requests from concurrent workers.
	type result struct {
		req      int
		answer   loadAnswer
		latency  time.Duration // of the attempt answered
		refusals int           // 429s (503s on the Ollama routes) before it
	}
	const maxAttempts = 1000
	results := make([]result, total)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrent {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= total {
					return
				}
				k := (i * 7) % len(reqs) // every request many times, interleaved
				for attempt := 1; ; attempt++ {
					t0 := time.Now()
					a := send(client, srv.URL, reqs[k])
					// The queue is full: 429, or on the Ollama routes Ollama's 503 server busy.
					busy := a.status == http.StatusTooManyRequests || (strings.HasPrefix(reqs[k].path, "/api/") && a.status == http.StatusServiceUnavailable)
					if !busy || attempt == maxAttempts {
						results[i] = result{req: k, answer: a, latency: time.Since(t0), refusals: attempt - 1}
						break
					}
					// Refused: the queue is full. A client backs off and retries.
					time.Sleep(min(time.Duration(attempt)*20*time.Millisecond, 500*time.Millisecond))
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)

	answered, refused, errs := 0, 0, 0
	var lat []time.Duration
	want := map[[2]string]int{} // (request, response) hashes of every answer, single ones included
	for _, a := range single {
		want[[2]string{a.request, a.response}]++
	}
	for i, r := range results {
		refused += r.refusals
		switch {
		case r.answer.status == http.StatusOK && r.answer.err == "":
			answered++
			lat = append(lat, r.latency)
			want[[2]string{r.answer.request, r.answer.response}]++
			if !r.answer.same(single[r.req]) {
				t.Errorf("request %d (%s %s): answer %+v under load, %+v alone", i, reqs[r.req].path, reqs[r.req].body, r.answer, single[r.req])
			}
		default:
			errs++
			t.Errorf("request %d (%s): status %d: %s", i, reqs[r.req].path, r.answer.status, r.answer.err)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	t.Logf("load: %d requests, %d concurrent, --parallel 2 --queue 5: %d answered, %d refusals (429, retried after a back-off), %d errors; %.1f answers/s; latency p50 %v p99 %v (of the answered attempts)",
		total, concurrent, answered, refused, errs, float64(total)/wall.Seconds(), pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond))

	// A graceful stop, then the history.
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-srv.done; err != nil {
		t.Errorf("bankml serve after SIGTERM: %v\n%s", err, srv.Stderr())
	}
	srv.done <- nil
	rep := ledgerVerify(t, dir)
	if rep.Size != uint64(answered+len(single)) || rep.TornBytes != 0 {
		t.Errorf("ledger: %d entries, %d torn bytes; want %d (%d answered under load, %d alone)", rep.Size, rep.TornBytes, answered+len(single), answered, len(single))
	}
	got := map[[2]string]int{}
	if err := ledger.Entries(dir, func(e ledger.Entry) error {
		var rc struct {
			RequestSHA256  string `json:"request_sha256"`
			ResponseSHA256 string `json:"response_sha256"`
		}
		if err := json.Unmarshal(e.Receipt, &rc); err != nil {
			return err
		}
		if rc.RequestSHA256 != sha256Hex(e.Request) || rc.ResponseSHA256 != sha256Hex(e.Answer) {
			t.Errorf("entry %d: receipt hashes do not match its request and answer", e.Index)
		}
		got[[2]string{rc.RequestSHA256, rc.ResponseSHA256}]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("ledger has %d entries for request %s response %s, clients received %d", got[k], k[0][:12], k[1][:12], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("ledger has %d distinct exchanges, clients received %d", len(got), len(want))
	}
}

// TestKillDashNineMidAppendLeavesAVerifiableLedger kills `bankml serve
// --history DIR` with SIGKILL while four clients keep it appending, three
// times, restarting it on the same folder each time: after every kill the
// ledger verifies (`bankml ledger verify`), holds every answer a client
// received completely (each is on disk before its receipt is sent) and at
// most the ones in flight besides; a restart cuts a torn last line off.
func TestKillDashNineMidAppendLeavesAVerifiableLedger(t *testing.T) {
	dir := t.TempDir()
	path := stories(t)
	rng := rand.New(rand.NewPCG(7, 9))
	received := 0
	for round := range 3 {
		srv := startServe(t, path, "-t", "1", "--parallel", "2", "--history", dir)
		var models struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		getJSON(t, srv.URL+"/v1/models", &models)
		var done atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		client := &http.Client{Timeout: time.Minute}
		for w := range 4 {
			wg.Go(func() {
				for n := 0; n < 100; n++ { // bounded
					select {
					case <-stop:
						return
					default:
					}
					body := fmt.Appendf(nil, `{"model":%q,"prompt":"Once upon a time","temperature":0.8,"seed":%d,"max_tokens":%d}`, models.Data[0].ID, round*1000+w*100+n, 8+n%24)
					if a := send(client, srv.URL, loadRequest{"/v1/completions", body}); a.status == http.StatusOK && a.err == "" {
						done.Add(1)
					}
				}
			})
		}
		target := int64(5 + rng.IntN(20))
		for done.Load() < target {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		srv.kill()
		close(stop)
		wg.Wait()
		received += int(done.Load())
		rep := ledgerVerify(t, dir)
		if int(rep.Size) < received || int(rep.Size) > received+4*(round+1) {
			t.Errorf("round %d: ledger has %d entries; clients received %d answers completely (at most 4 more per kill were in flight)", round, rep.Size, received)
		}
		t.Logf("round %d: killed after %d answers; ledger %d entries, %d torn bytes", round, done.Load(), rep.Size, rep.TornBytes)
		received = int(rep.Size) // answers recorded but not received count from now on
	}
	srv := startServe(t, path, "-t", "1", "--history", dir)
	srv.kill()
	rep := ledgerVerify(t, dir)
	if rep.TornBytes != 0 || rep.Size != uint64(received) {
		t.Errorf("after a restart: %d entries, %d torn bytes; want %d, 0", rep.Size, rep.TornBytes, received)
	}
}
