// The tests' DuckDB (tests/sync_analyst_test.go): reads what foodsafe-sync
// exported, as a partner's DuckDB would, and prints JSON on stdout.
//
//   node read.mjs files DIR   every DIR/*.parquet: its columns (name, DuckDB
//                             type) and its rows, every column selected by
//                             its name unquoted
//   node read.mjs query DIR   runs each SQL statement of the JSON array on
//                             stdin with DIR as the working directory (so a
//                             recipe names files as 'mirror-parquet/x.parquet'
//                             relative to it): each one's column names and rows
//
// Values: BIGINT as a decimal string, DOUBLE as a JSON number, timestamps
// as ISO-8601 UTC with milliseconds, dates as YYYY-MM-DD, NULL as null.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, DuckDBTimestampTZValue, DuckDBTimestampValue, DuckDBDateValue } from '@duckdb/node-api';

function plain(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return v;
  if (v instanceof DuckDBTimestampTZValue || v instanceof DuckDBTimestampValue) {
    return new Date(Number(v.micros / 1000n)).toISOString();
  }
  if (v instanceof DuckDBDateValue) return v.toString();
  return String(v);
}

async function read(conn, sql) {
  const reader = await conn.runAndReadAll(sql);
  return { columns: reader.columnNames(), rows: reader.getRows().map((r) => r.map(plain)) };
}

const [mode, dir] = process.argv.slice(2);
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const out = mode === 'files' ? {} : [];
if (mode === 'files') {
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.parquet')).sort()) {
    const path = join(dir, f).replaceAll("'", "''");
    const desc = await read(conn, `DESCRIBE SELECT * FROM '${path}'`);
    const columns = desc.rows.map((r) => ({ name: r[0], type: r[1] }));
    const all = await read(conn, `SELECT ${columns.map((c) => c.name).join(', ')} FROM '${path}'`);
    out[f] = { columns, rows: all.rows };
  }
} else if (mode === 'query') {
  process.chdir(dir);
  for (const sql of JSON.parse(readFileSync(0, 'utf8'))) out.push(await read(conn, sql));
} else {
  console.error('usage: node read.mjs files|query DIR');
  process.exit(2);
}
process.stdout.write(JSON.stringify(out));
