import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const file = process.env.TINY_NOTES_FILE ?? 'notes.json';

function load() {
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : [];
}

export function addNote({ text, tag }) {
  const notes = load();
  notes.push({ text, tag: tag ?? null, at: new Date().toISOString() });
  writeFileSync(file, JSON.stringify(notes, null, 2));
}

export function listNotes({ tag }) {
  return load().filter((note) => !tag || note.tag === tag);
}
