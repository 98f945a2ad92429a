#!/usr/bin/env node
// Generates types/spec.d.ts from docs/job-spec.schema.json, so the job
// spec's TypeScript type cannot drift from the schema the server checks
// (tests/clients/t_node.sh regenerates and diffs).  Only the JSON Schema
// keywords the schema uses are understood; any other keyword stops the
// generator with its path, so a schema change it cannot express is seen
// here rather than silently typed as "anything".
//
//   node scripts/gen-types.mjs [SCHEMA] [OUT]   (OUT "-": stdout)
//
// What a type can hold becomes a type: objects (closed unless
// additionalProperties says otherwise), arrays (non-empty when minItems
// >= 1), enums and constants, oneOf/anyOf as unions, "oneOf exactly one of
// these keys" and dependentRequired as unions of key sets, and if/then
// rules keyed on an enum (the file operations) as one object per value.
// Bounds, lengths and patterns stay the server's to check (they are in
// each field's doc comment).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const schemaPath = process.argv[2] ?? join(here, '../../../docs/job-spec.schema.json');
const outPath = process.argv[3] ?? join(here, '../types/spec.d.ts');

// Validation keywords a type cannot hold: left to the server.
const CHECKS = new Set(['minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'maxProperties',
  'maxItems', 'minItems', 'not', 'propertyNames', 'prefixItems', 'default', 'description',
  '$schema', '$id', 'title']);
const SHAPES = new Set(['type', 'properties', 'required', 'additionalProperties', 'items', 'enum',
  'const', 'oneOf', 'anyOf', 'allOf', 'if', 'then', 'dependentRequired']);

const pascal = (s) => s.replace(/(^|_)([a-z])/g, (_, __, c) => c.toUpperCase());
const lit = (v) => JSON.stringify(v);
const key = (k) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? k : lit(k));

function checkKeywords(s, path) {
  for (const k of Object.keys(s)) {
    if (!CHECKS.has(k) && !SHAPES.has(k)) throw new Error(`${path}: keyword "${k}" is not understood by gen-types.mjs`);
  }
}

function docOf(s, indent) {
  const lines = [];
  if (s.description) lines.push(s.description);
  const bounds = [];
  for (const k of ['minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'pattern']) {
    if (s[k] !== undefined) bounds.push(`${k} ${typeof s[k] === 'string' ? s[k] : lit(s[k])}`);
  }
  if (bounds.length) lines.push(`Checked by the server: ${bounds.join(', ')}.`);
  if (s.default !== undefined) lines.push(`@default ${lit(s.default)}`);
  if (!lines.length) return '';
  const body = lines.flatMap((l) => l.split('\n')).map((l) => `${indent} * ${l.replace(/\*\//g, '*\\/')}`);
  return `${indent}/**\n${body.join('\n')}\n${indent} */\n`;
}

// A schema whose only content is "these keys are required" (a oneOf branch).
const requiredOnly = (s) => Object.keys(s).every((k) => k === 'required');

class Gen {
  constructor() { this.decls = []; }

  // The type of schema s; name: the alias to give a named object type.
  type(s, path, indent = '') {
    checkKeywords(s, path);
    if (s.const !== undefined) return lit(s.const);
    if (s.enum) return s.enum.map(lit).join(' | ');
    if (s.type === 'object' || s.properties || s.additionalProperties !== undefined) return this.object(s, path, indent);
    if (s.type === 'array') return this.array(s, path, indent);
    if (s.oneOf || s.anyOf) return (s.oneOf ?? s.anyOf).map((b, i) => this.type(b, `${path}/oneOf/${i}`, indent)).join(' | ');
    if (s.allOf) {
      const parts = s.allOf.map((b, i) => this.type(b, `${path}/allOf/${i}`, indent)).filter((t) => t !== 'unknown');
      return parts.length ? parts.join(' & ') : 'unknown';
    }
    switch (s.type) {
      case 'string': return 'string';
      case 'number': case 'integer': return 'number';
      case 'boolean': return 'boolean';
      case undefined: return 'unknown';
      default: throw new Error(`${path}: type "${s.type}" is not understood`);
    }
  }

  array(s, path, indent) {
    const item = s.items ? this.type(s.items, `${path}/items`, indent) : 'unknown';
    const t = /^[A-Za-z0-9_]+$/.test(item) ? item : `(${item})`;
    return s.minItems >= 1 ? `[${item}, ...${t}[]]` : `${t}[]`;
  }

  // The members of an object type, one per line.
  members(props, required, indent, only = null, extraRequired = []) {
    const req = new Set([...(required ?? []), ...extraRequired]);
    const out = [];
    for (const [k, p] of Object.entries(props ?? {})) {
      if (only && !only.has(k)) continue;
      out.push(`${docOf(p, indent + '  ')}${indent}  ${key(k)}${req.has(k) ? '' : '?'}: ${this.type(p, `#/${k}`, indent + '  ')};`);
    }
    return out;
  }

  object(s, path, indent) {
    const parts = [];
    // if/then rules keyed on one enum property: one object type per value.
    const rules = (s.allOf ?? []).filter((r) => r.if && r.then);
    const keyed = rules.filter((r) => r.then.propertyNames?.enum);
    if (keyed.length) {
      const tag = Object.keys(keyed[0].if.properties)[0];
      const variants = [];
      for (const r of keyed) {
        for (const v of r.if.properties[tag].enum) {
          const only = new Set(r.then.propertyNames.enum);
          const body = this.members({ ...s.properties, [tag]: { const: v } }, s.required, indent, only, r.then.required);
          variants.push(`{\n${body.join('\n')}\n${indent}}`);
        }
      }
      for (const r of rules) {
        if (!keyed.includes(r) && Object.keys(r.then).some((k) => k !== 'properties')) {
          throw new Error(`${path}: an if/then rule other than a keyed one or a property check`);
        }
      }
      parts.push(variants.length > 1 ? `(${variants.join(' | ')})` : variants[0]);
    } else {
      for (const [i, r] of (s.allOf ?? []).entries()) {
        if (!(r.if && r.then && Object.keys(r.then).every((k) => k === 'properties'))) {
          throw new Error(`${path}/allOf/${i}: only if/then property checks are understood inside an object`);
        }
        // A conditional pattern or exclusion: the server's to check.
      }
      const body = this.members(s.properties, s.required, indent);
      const ap = s.additionalProperties;
      if (ap !== undefined && ap !== false) {
        const t = ap === true ? 'unknown' : this.type(ap, `${path}/additionalProperties`, indent + '  ');
        body.push(`${indent}  [name: string]: ${t};`);
      } else if (!s.properties) {
        body.push(`${indent}  [name: string]: unknown;`);
      }
      parts.push(`{\n${body.join('\n')}\n${indent}}`);
    }
    // "Exactly one of these keys": each branch requires its key and
    // forbids the others.
    if (s.oneOf) {
      if (!s.oneOf.every(requiredOnly)) throw new Error(`${path}/oneOf: only "required" branches are understood on an object`);
      const all = s.oneOf.flatMap((b) => b.required);
      const branches = s.oneOf.map((b) => {
        const m = all.map((k) => (b.required.includes(k) ? `${key(k)}: NonNullable<unknown>` : `${key(k)}?: never`));
        return `{ ${m.join('; ')} }`;
      });
      parts.push(`(${branches.join(' | ')})`);
    }
    for (const [k, deps] of Object.entries(s.dependentRequired ?? {})) {
      parts.push(`({ ${key(k)}?: never } | { ${[k, ...deps].map((d) => `${key(d)}: NonNullable<unknown>`).join('; ')} })`);
    }
    return parts.join(' & ');
  }
}

function generate(schema) {
  const g = new Gen();
  checkKeywords(schema, '#');
  const out = [];
  out.push('// GENERATED by clients/node/scripts/gen-types.mjs from docs/job-spec.schema.json;');
  out.push('// do not edit: run `npm run gen-types` in clients/node after changing the schema.');
  out.push('');
  // Each top-level property gets a named type, the spec refers to them.
  const refs = {};
  for (const [k, p] of Object.entries(schema.properties)) {
    const name = pascal(k);
    let t;
    if (p.type === 'array' && p.items?.type === 'object') {
      const item = `${name}Item`;
      out.push(`${docOf(p.items, '')}export type ${item} = ${g.type(p.items, `#/${k}/items`)};`);
      out.push('');
      t = p.minItems >= 1 ? `[${item}, ...${item}[]]` : `${item}[]`;
      checkKeywords(p, `#/${k}`);
    } else {
      t = g.type(p, `#/${k}`);
    }
    out.push(`${docOf(p, '')}export type ${name} = ${t};`);
    out.push('');
    refs[k] = name;
  }

  // The spec itself: its members refer to the named types.
  const members = Object.entries(schema.properties).map(([k, p]) => {
    const req = (schema.required ?? []).includes(k);
    return `${docOf(p, '  ')}  ${key(k)}${req ? '' : '?'}: ${refs[k]};`;
  });
  let spec = `{\n${members.join('\n')}\n}`;
  // The spec's own key rules (one mode; dependentRequired) as on any object.
  const rules = g.object({ oneOf: schema.oneOf, dependentRequired: schema.dependentRequired, properties: {}, type: 'object' }, '#', '');
  spec += rules.replace(/^\{\n\n\}/, '');
  for (const [i, r] of (schema.allOf ?? []).entries()) {
    if (!(r.if && r.then && Object.keys(r.then).every((k) => k === 'properties'))) {
      throw new Error(`#/allOf/${i}: only if/then property checks are understood at the top`);
    }
  }
  out.push(`${docOf({ description: `${schema.title}. ${schema.description}` }, '')}export type JobSpec = ${spec};`);
  out.push('');
  return out.join('\n');
}

let text;
try {
  text = generate(JSON.parse(readFileSync(schemaPath, 'utf8')));
} catch (e) {
  process.stderr.write(`gen-types: ${schemaPath}: ${e.message}\n`);
  process.exit(1);
}
if (outPath === '-') process.stdout.write(text);
else writeFileSync(outPath, text);
