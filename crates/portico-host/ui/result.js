// A tool's result, by content type: text, images, audio, embedded resources, resource links,
// and structured content as a tree. Nothing from the result becomes markup; images and audio
// are data: URLs of a checked media type.

import { h, tree } from './dom.js';

const MEDIA = /^[a-z]+\/[a-z0-9.+-]+$/i;
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;

function dataUrl(kind, mime, data) {
  if (typeof mime !== 'string' || !MEDIA.test(mime) || !mime.toLowerCase().startsWith(`${kind}/`)) return null;
  if (typeof data !== 'string' || !BASE64.test(data)) return null;
  return `data:${mime};base64,${data.replace(/\s/g, '')}`;
}

function block(c) {
  switch (c && c.type) {
    case 'text':
      return h('pre', { class: 'text' }, String(c.text ?? ''));
    case 'image': {
      const url = dataUrl('image', c.mimeType, c.data);
      return url
        ? h('figure', {}, h('img', { src: url, alt: `Image (${c.mimeType}) from the tool` }), h('figcaption', {}, c.mimeType))
        : h('p', { class: 'error-text' }, `An image of type ${String(c.mimeType)} that cannot be shown.`);
    }
    case 'audio': {
      const url = dataUrl('audio', c.mimeType, c.data);
      return url
        ? h('figure', {}, h('audio', { controls: true, src: url, 'aria-label': `Audio (${c.mimeType}) from the tool` }), h('figcaption', {}, c.mimeType))
        : h('p', { class: 'error-text' }, `Audio of type ${String(c.mimeType)} that cannot be played.`);
    }
    case 'resource': {
      const r = c.resource || {};
      return h('section', { class: 'resource' },
        h('h4', {}, 'Embedded resource: ', h('code', {}, String(r.uri ?? ''))),
        r.mimeType ? h('p', { class: 'note' }, r.mimeType) : null,
        typeof r.text === 'string' ? h('pre', { class: 'text' }, r.text)
          : typeof r.blob === 'string' ? h('p', { class: 'note' }, `${Math.floor((r.blob.length * 3) / 4)} bytes of binary data`) : null);
    }
    case 'resource_link':
      return h('section', { class: 'resource' },
        h('h4', {}, 'Resource link: ', h('code', {}, String(c.uri ?? ''))),
        c.name ? h('p', {}, c.title || c.name) : null,
        c.description ? h('p', { class: 'note' }, c.description) : null);
    default:
      return h('div', {}, h('p', { class: 'note' }, `Content of type ${String(c && c.type)}:`), tree(c));
  }
}

/** The whole result. */
export function renderResult(result) {
  const content = Array.isArray(result && result.content) ? result.content : [];
  return h('div', { class: `result${result && result.isError ? ' is-error' : ''}`, role: 'region', 'aria-label': 'Result' },
    result && result.isError ? h('p', { class: 'error-text', role: 'alert' }, 'The tool reported an error.') : null,
    content.map(block),
    result && result.structuredContent !== undefined
      ? h('section', { class: 'structured' }, h('h4', {}, 'Structured content'), tree(result.structuredContent))
      : null);
}
