-- +goose Up

-- Integer fields of record data are integers on the wire: since this
-- release the service stores a number it receives in such a field in plain
-- integer form (1.0, 1E2, 2.50e1, -0.0 become 1, 100, 25, 0), so that a
-- partner's typed client can decode it into an integer. This rewrites the
-- numbers of those fields already stored in another form, in records and
-- in the change log, the same way: only the number's text changes; every
-- other member keeps its stored text (the objects on the way to the number
-- are written without the spaces of jsonb's text form, which rows stored
-- before migration 00013 have). A request's digest compares values, so
-- replays of the changes rewritten still match.
--
-- The fields, by collection (the schemas' integer fields; an asset's
-- byteLength is written by the service, checked all the same):
--   equipment, fryer-equipment, cooking-equipment: index
--   cleaning-tasks: index, recurrence
--   restaurants: settings.global.exportSchedule.dayOfWeek and .dayOfMonth,
--     settings.global.reportWeekday, subscription.remindersSent
--   cleaning-task-pictures, traceability-labels, drive-files: asset.byteLength
--
-- Cost: one sequential read of records and of record_changes that parses
-- the data of the rows of those eight collections (reference data, a small
-- share of the rows); only rows holding such a number are updated, one at
-- a time, by primary key. Reads and writes go on throughout (no lock but
-- the updated rows'). Deploy the binary that comes with it first, so that
-- nothing written meanwhile needs it. The rewrite itself is computed by a
-- function of this session (pg_temp), called on the coordinator with each
-- row's data, so it also runs on Citus.

-- +goose StatementBegin
-- doc with the number at path in plain integer form: the objects along
-- the path are rebuilt member by member, each other member's text as
-- stored.
CREATE FUNCTION pg_temp.foodsafe_plain_integer(doc json, path text[]) RETURNS json
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    found json := doc -> path[1];
    fixed json;
BEGIN
    IF json_typeof(doc) IS DISTINCT FROM 'object' OR found IS NULL THEN
        RETURN doc;
    END IF;
    IF cardinality(path) > 1 THEN
        fixed := pg_temp.foodsafe_plain_integer(found, path[2:]);
    ELSIF json_typeof(found) = 'number' AND found::text::numeric = trunc(found::text::numeric) THEN
        fixed := trim_scale(found::text::numeric)::text::json;
    ELSE
        RETURN doc;
    END IF;
    IF fixed::text = found::text THEN
        RETURN doc;
    END IF;
    RETURN (SELECT ('{' || string_agg(to_json(e.key)::text || ':' || CASE WHEN e.key = path[1] THEN fixed::text ELSE e.value::text END,
                                      ',' ORDER BY e.n) || '}')::json
            FROM json_each(doc) WITH ORDINALITY AS e(key, value, n));
END
$fn$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    -- $1: a plain integer: digits, no leading zero, no fraction, no
    -- exponent, no minus zero.
    plain constant text := '^(0|-?[1-9][0-9]*)$';
    candidates constant text := $q$
        SELECT restaurant_id, collection, %s AS id, data FROM %I
        WHERE data IS NOT NULL AND (
              (collection IN ('equipment', 'fryer-equipment', 'cooking-equipment', 'cleaning-tasks')
               AND json_typeof(data -> 'index') = 'number' AND data ->> 'index' !~ $1)
           OR (collection = 'cleaning-tasks'
               AND json_typeof(data -> 'recurrence') = 'number' AND data ->> 'recurrence' !~ $1)
           OR (collection = 'restaurants' AND (
                  (json_typeof(data #> '{settings,global,exportSchedule,dayOfWeek}') = 'number'
                   AND data #>> '{settings,global,exportSchedule,dayOfWeek}' !~ $1)
               OR (json_typeof(data #> '{settings,global,exportSchedule,dayOfMonth}') = 'number'
                   AND data #>> '{settings,global,exportSchedule,dayOfMonth}' !~ $1)
               OR (json_typeof(data #> '{settings,global,reportWeekday}') = 'number'
                   AND data #>> '{settings,global,reportWeekday}' !~ $1)
               OR (json_typeof(data #> '{subscription,remindersSent}') = 'number'
                   AND data #>> '{subscription,remindersSent}' !~ $1)))
           OR (collection IN ('cleaning-task-pictures', 'traceability-labels', 'drive-files')
               AND json_typeof(data #> '{asset,byteLength}') = 'number' AND data #>> '{asset,byteLength}' !~ $1))
    $q$;
    t text;
    r record;
    fixed json;
    p text;
    rows_fixed bigint := 0;
BEGIN
    FOREACH t IN ARRAY ARRAY['records', 'record_changes'] LOOP
        FOR r IN EXECUTE format(candidates, CASE t WHEN 'records' THEN 'record_id' ELSE 'mutation_id' END, t) USING plain LOOP
            fixed := r.data;
            FOREACH p IN ARRAY CASE r.collection
                WHEN 'cleaning-tasks' THEN ARRAY['index', 'recurrence']
                WHEN 'restaurants' THEN ARRAY['settings.global.exportSchedule.dayOfWeek', 'settings.global.exportSchedule.dayOfMonth',
                                              'settings.global.reportWeekday', 'subscription.remindersSent']
                WHEN 'cleaning-task-pictures' THEN ARRAY['asset.byteLength']
                WHEN 'traceability-labels' THEN ARRAY['asset.byteLength']
                WHEN 'drive-files' THEN ARRAY['asset.byteLength']
                ELSE ARRAY['index']
            END LOOP
                fixed := pg_temp.foodsafe_plain_integer(fixed, string_to_array(p, '.'));
            END LOOP;
            -- By primary key, the new text as a parameter: a single-row
            -- update on plain PostgreSQL and on Citus alike.
            IF t = 'records' THEN
                UPDATE records SET data = fixed
                WHERE restaurant_id = r.restaurant_id AND collection = r.collection AND record_id = r.id;
            ELSE
                UPDATE record_changes SET data = fixed
                WHERE restaurant_id = r.restaurant_id AND mutation_id = r.id;
            END IF;
            rows_fixed := rows_fixed + 1;
        END LOOP;
    END LOOP;
    RAISE NOTICE 'integer fields in plain form: % rows rewritten', rows_fixed;
END
$$;
-- +goose StatementEnd

DROP FUNCTION pg_temp.foodsafe_plain_integer(json, text[]);

-- +goose Down
-- Nothing to undo: the rewritten numbers have the values they had.
SELECT 1;
