// Command bare is the ceiling of make bench-http's ratios: the service's
// own stack, net/http and a pgx pool, with nothing of the service on top.
// It answers every request by running one statement with fixed arguments,
// reading its rows without decoding them, and writing a fixed body: the
// body the service answered to the same request, byte for byte (with only
// Content-Type and Content-Length for headers). No routing, key, scope,
// cursor, scan into structs, JSON, audit event, log line or metric.
//
// What it reaches against the statement under pgbench is as close as any
// service built on net/http and pgx can come on the machine: the answer
// still crosses a second loopback hop and the load generator still parses
// it. make bench-http prints it beside the service, so a ratio the service
// misses can be told apart from one the stack itself cannot reach.
//
// Usage: bare -sql FILE -body FILE [-arg VALUE]... (DATABASE_URL names
// the database and may size the pool, as pool_max_conns). FILE holds one statement with parameters $1, $2, ...;
// each -arg is the text of the next parameter, which PostgreSQL converts
// to the parameter's type. It prints the address it listens on, then
// serves until killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// args collects the repeated -arg flag.
type args []any

func (a *args) String() string { return fmt.Sprint(*a) }

func (a *args) Set(v string) error { *a = append(*a, v); return nil }

func main() {
	var (
		sqlFile  = flag.String("sql", "", "file holding the statement")
		bodyFile = flag.String("body", "", "file holding the answer to write")
		addr     = flag.String("addr", "127.0.0.1:0", "address to listen on")
		params   args
	)
	flag.Var(&params, "arg", "the text of the next parameter (repeatable)")
	flag.Parse()
	stmt, err := os.ReadFile(*sqlFile)
	if err != nil {
		log.Fatal(err)
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		log.Fatal(err)
	}
	query := strings.TrimSuffix(strings.TrimSpace(string(stmt)), ";")
	pool, err := pgxpool.New(context.Background(), os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	// One run before serving: a statement that fails fails here, not as
	// a benchmark of error answers.
	if err := run(context.Background(), pool, query, params); err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ln.Addr())
	length := strconv.Itoa(len(body))
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := run(r.Context(), pool, query, params); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", length)
		_, _ = w.Write(body)
	})))
}

// run executes the statement and reads its rows as raw bytes, which is
// the least a reader of them can do.
func run(ctx context.Context, pool *pgxpool.Pool, query string, params args) error {
	rows, err := pool.Query(ctx, query, params...)
	if err != nil {
		return err
	}
	for rows.Next() {
		_ = rows.RawValues()
	}
	rows.Close()
	return rows.Err()
}
