import { crc32, deflateSync } from 'node:zlib';

/**
 * Small but real media files for the simulator: a PNG image, PCM WAV audio and MP3
 * audio (frames of silence), so clients can decode what the offline gateway returns.
 */

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A `size`×`size` RGB PNG of one colour. */
export function solidPng(rgb: [number, number, number], size = 8): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: truecolour
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: size }, () => rgb).flat())]);
  const pixels = Buffer.concat(Array.from({ length: size }, () => row));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk('IHDR', header), pngChunk('IDAT', deflateSync(pixels)), pngChunk('IEND', Buffer.alloc(0))]);
}

export const SPEECH_SAMPLE_RATE = 24_000;

/** 16-bit mono PCM samples of a quiet 440 Hz tone lasting `ms` milliseconds. */
export function tonePcm(ms: number, sampleRate = SPEECH_SAMPLE_RATE): Buffer {
  const samples = Math.round((ms / 1000) * sampleRate);
  const pcm = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) pcm.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / sampleRate) * 3000), i * 2);
  return pcm;
}

/** A RIFF/WAVE file around 16-bit mono PCM. */
export function wavFile(pcm: Buffer, sampleRate = SPEECH_SAMPLE_RATE): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28); // byte rate
  header.writeUInt16LE(2, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([header, pcm]);
}

/** Seconds of audio in a PCM WAV file, or undefined when it is not one. */
export function wavSeconds(file: Buffer): number | undefined {
  if (file.length < 44 || file.toString('ascii', 0, 4) !== 'RIFF' || file.toString('ascii', 8, 12) !== 'WAVE') return undefined;
  const byteRate = file.readUInt32LE(28);
  return byteRate > 0 ? (file.length - 44) / byteRate : undefined;
}

// MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, mono, no CRC: 417-byte frames of 1152 samples.
// All-zero side information and main data decode as silence.
const MP3_FRAME_BYTES = 417;
const MP3_FRAME_MS = (1152 / 44_100) * 1000;

export function silentMp3(ms: number): Buffer {
  const frames = Math.max(1, Math.ceil(ms / MP3_FRAME_MS));
  const frame = Buffer.alloc(MP3_FRAME_BYTES);
  frame.set([0xff, 0xfb, 0x90, 0xc0]);
  return Buffer.concat(Array.from({ length: frames }, () => frame));
}
