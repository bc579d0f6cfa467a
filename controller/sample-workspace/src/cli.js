#!/usr/bin/env node
import { addNote, listNotes } from './store.js';

const [command, text, ...rest] = process.argv.slice(2);
const tag = rest[rest.indexOf('--tag') + 1];
if (command === 'add') addNote({ text, tag });
else if (command === 'list') for (const note of listNotes({ tag })) console.log(`- ${note.text}`);
else console.error('usage: tiny-notes add TEXT [--tag TAG] | list [--tag TAG]');
