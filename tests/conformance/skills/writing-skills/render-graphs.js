#!/usr/bin/env node
/**
 * Render graphviz blocks of a skill's SKILL.md (counts them here).
 */
const fs = require('fs');
const path = require('path');
const dir = process.argv[2] || '.';
const md = path.join(dir, 'SKILL.md');
const text = fs.existsSync(md) ? fs.readFileSync(md, 'utf8') : '';
console.log(`${(text.match(/```dot/g) || []).length} diagrams in ${dir}`);
