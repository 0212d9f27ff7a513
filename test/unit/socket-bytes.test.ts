/**
 * The e2e benchmark's bytes on the wire: `ss -tinH state established`
 * output parsed into per-socket counters, and the difference between two
 * snapshots counting each byte once.
 */
import { describe, expect, it } from 'vitest'
import { bytesBetween, parseSs, tcpPortOf } from '../../bench/common/socket-bytes.js'

const SS = [
  '0      0          127.0.0.1:4001    127.0.0.1:38318',
  '\t cubic wscale:7,7 rto:204 rtt:0.02/0.01 mss:32768 bytes_sent:900 bytes_acked:900 bytes_received:1200 segs_out:9',
  '0      0          127.0.0.1:38318    127.0.0.1:4001',
  '\t cubic wscale:7,7 rto:204 rtt:0.02/0.01 mss:32768 bytes_sent:1200 bytes_acked:1200 bytes_received:900 segs_out:9',
  '0      0          127.0.0.1:8080    127.0.0.1:50000',
  '\t cubic bytes_received:77777',
  '0      0          127.0.0.1:50001    127.0.0.1:4002',
  '\t cubic wscale:7,7 rto:204 mss:32768 segs_out:1'
].join('\n')

describe('socket bytes (bench)', () => {
  it('keeps the sockets on the given ports, with their bytes_received (0 when none yet)', () => {
    const snap = parseSs(SS, new Set([4001, 4002]))
    expect([...snap]).toStrictEqual([
      ['127.0.0.1:4001>127.0.0.1:38318', 1200],
      ['127.0.0.1:38318>127.0.0.1:4001', 900],
      ['127.0.0.1:50001>127.0.0.1:4002', 0]
    ])
  })

  it('counts both directions of a connection once, new sockets from zero, and closed ones apart', () => {
    const before = new Map([
      ['a>b', 100],
      ['b>a', 50],
      ['gone>x', 10]
    ])
    const after = new Map([
      ['a>b', 400],
      ['b>a', 150],
      ['new>y', 30]
    ])
    expect(bytesBetween(before, after)).toStrictEqual({ bytes: 300 + 100 + 30, sockets: 3, closed: 1 })
  })

  it('reads the TCP port of a multiaddr', () => {
    expect(tcpPortOf('/ip4/127.0.0.1/tcp/4001/p2p/12D3KooW')).toBe(4001)
    expect(tcpPortOf('/ip4/127.0.0.1/udp/4001/quic')).toBeUndefined()
  })
})
