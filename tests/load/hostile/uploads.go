package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// trickleAttack: every trickle key opens 4 uploads (the default
// FOODSAFE_UPLOADS_PER_KEY) that send one byte every 4 s, as many as a
// server takes (8 keys x 4: FOODSAFE_UPLOADS_MAX, 32); meanwhile another
// device (the writer key) tries its upload every second. A byte every
// 4 s is inside hostile.sh's 5 s FOODSAFE_UPLOAD_IDLE_TIMEOUT as a byte
// every 20 s is inside the default 30 s: the idle timer alone never cuts
// them. Bound: the device's upload succeeds within 90 s; the trickles that
// held a slot are cut (408) before the phase's deadline rather than held
// until FOODSAFE_UPLOAD_TIMEOUT (10 minutes).
func (c config) trickleAttack() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	p := c.start(fmt.Sprintf("trickle: %d keys x 4 uploads sending a byte every 4 s, another device uploading beside them", len(c.trickleKeys)))
	c.withPartner(p)
	host := strings.TrimPrefix(c.api, "http://")
	digest := sha256.Sum256([]byte("hello, world"))
	trickles := make([]answer, 4*len(c.trickleKeys))
	var opened, all sync.WaitGroup
	for i := range trickles {
		key := c.trickleKeys[i/4]
		opened.Add(1)
		all.Go(func() { trickles[i] = trickleUpload(ctx, host, c.uploadPath, key, digest, opened.Done) })
		time.Sleep(10 * time.Millisecond) // each key's uploads in turn, as devices start them
	}
	opened.Wait()
	t0 := time.Now()
	client := from(21, 30*time.Second)
	data := bytes.Repeat([]byte("device file "), 1000)
	id := "trickle-device-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	statuses := map[int]int{}
	var took time.Duration
	if err := c.putRecord(ctx, client, id, len(data)); err != nil {
		p.check(false, "the device's record: %v", err)
	}
	for ctx.Err() == nil && took == 0 {
		status, err := c.putAsset(ctx, client, id, data)
		switch {
		case err != nil:
			statuses[-1]++
		case status == http.StatusOK:
			took = time.Since(t0)
		default:
			statuses[status]++
		}
		if took == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	all.Wait() // the trickles end when cut, or at the phase's deadline
	outcome := fmt.Sprintf("succeeded after %.1f s", took.Seconds())
	if took == 0 {
		outcome = fmt.Sprintf("never succeeded in the phase's %s", c.deadline)
	}
	p.check(took > 0 && took < 90*time.Second, "the other device's upload %s (bound 90 s); refused before: %v", outcome, statuses)
	for _, row := range tally(trickles) {
		p.checks = append(p.checks, "     trickles answered "+row.label+": "+row.value)
	}
	cut := 0
	for _, t := range trickles {
		if t.status == http.StatusRequestTimeout {
			cut++
		}
	}
	p.check(cut > 0, "%d trickles cut with 408 before the phase's end", cut)
	return c.end(p)
}

// trickleUpload opens a chunked upload from 127.0.0.20 and sends one byte
// every 4 s until the server answers or ctx ends.
func trickleUpload(ctx context.Context, host, path, key string, digest [32]byte, opened func()) answer {
	once := sync.OnceFunc(opened)
	defer once()
	t0 := time.Now()
	conn, err := dialFrom(ctx, 20, host)
	if err != nil {
		return answer{err: err}
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	head := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: image/png\r\n"+
		"Repr-Digest: sha-256=:%s:\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nh\r\n",
		path, host, key, base64.StdEncoding.EncodeToString(digest[:]))
	if _, err := io.WriteString(conn, head); err != nil {
		return answer{err: err}
	}
	once()
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(4 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if _, err := io.WriteString(conn, "1\r\nh\r\n"); err != nil {
					return
				}
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if ctx.Err() != nil {
		err = errHeldToTheEnd
	}
	if err != nil {
		return answer{err: err, took: time.Since(t0)}
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After") != "", took: time.Since(t0), bytes: int(n)}
}

// errHeldToTheEnd is a trickle still unanswered when the phase ended.
var errHeldToTheEnd = errors.New("still held at the phase's end")

// putRecord writes a drive-files record naming the file id with the
// writer key.
func (c config) putRecord(ctx context.Context, client *http.Client, id string, size int) error {
	return c.putRecordAs(ctx, client, c.writerKey, id, size)
}

func (c config) putRecordAs(ctx context.Context, client *http.Client, key, id string, size int) error {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	snap := fmt.Sprintf(`{"id":%q,"restaurantId":"demo-bistro","mutationId":"m-%s","capturedAt":%q,"sourceVersion":null,"payloadVersion":1,`+
		`"deleted":false,"data":{"s3Key":"k","name":"n","sizeBytes":%d,"asset":{"objectKey":%q,"status":"pending"}}}`, id, id, now, size, id)
	_, err := do(ctx, client, http.MethodPut, c.api+"/v1/ingest/restaurants/demo-bistro/collections/drive-files/records/"+id+"/mutations/m-"+id,
		key, []byte(snap), "Content-Type", "application/json", "Idempotency-Key", "m-"+id)
	return err
}

// putAsset uploads the file of record id with the writer key and says the
// answer's status.
func (c config) putAsset(ctx context.Context, client *http.Client, id string, data []byte) (int, error) {
	status, _, err := c.putAssetAs(ctx, client, c.writerKey, id, data)
	return status, err
}

func (c config) putAssetAs(ctx context.Context, client *http.Client, key, id string, data []byte) (int, string, error) {
	d := sha256.Sum256(data)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut,
		c.api+"/v1/ingest/restaurants/demo-bistro/collections/drive-files/records/"+id+"/asset?objectKey="+id, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(d[:])+":")
	res, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return res.StatusCode, string(b), nil
}

// quotaAttack: one key uploads 8 distinct files of 10 MiB, as fast as it
// can (one key stored 8 of 50 MB in 5.5 s before the quota). serve runs
// with FOODSAFE_UPLOAD_QUOTA_BYTES at 50 MiB (hostile.sh): bound, the key
// stores at most 5 and the rest are 429 upload-quota-exceeded.
func (c config) quotaAttack() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	p := c.start("quota: one key uploads 8 distinct files of 10 MiB, with FOODSAFE_UPLOAD_QUOTA_BYTES at 50 MiB")
	c.withPartner(p)
	client := from(22, 60*time.Second)
	stored, refused, other := 0, 0, map[int]int{}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	t0 := time.Now()
	for i := range 8 {
		id := fmt.Sprintf("quota-%s-%d", run, i)
		data := bytes.Repeat([]byte{byte('a' + i)}, 10<<20)
		if err := c.putRecordAs(ctx, client, c.quotaKey, id, len(data)); err != nil {
			p.check(false, "record %s: %v", id, err)
			continue
		}
		status, body, err := c.putAssetAs(ctx, client, c.quotaKey, id, data)
		switch {
		case err != nil:
			other[-1]++
		case status == http.StatusOK:
			stored++
		case status == http.StatusTooManyRequests && strings.Contains(body, "upload-quota-exceeded"):
			refused++
		default:
			other[status]++
		}
	}
	p.check(stored <= 5, "the key stored %d files of 10 MiB (at most 5: 50 MiB) in %.1f s; %d refused upload-quota-exceeded, other answers %v",
		stored, time.Since(t0).Seconds(), refused, other)
	return c.end(p)
}
