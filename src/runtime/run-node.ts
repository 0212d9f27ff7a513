import { startPeer } from './peer.js'
import type { NodeConfig } from './config.js'

/**
 * `npm start -- --role <role>`: start a peer, say where it is, report
 * progress while it runs, and stop cleanly on SIGINT/SIGTERM.
 */
export async function runNode (config: NodeConfig): Promise<number> {
  const peer = await startPeer(config)
  const print = (line: Record<string, unknown>, text: string): void => {
    console.log(config.json ? JSON.stringify({ t: new Date().toISOString(), ...line }) : text)
  }
  const s = peer.status()
  print({ event: 'started', ...s, http: peer.http?.url ?? null },
    [
      `plan-swarm ${config.role} ${s.peerId} in swarm "${config.swarm}"`,
      `  data dir  ${s.dataDir}`,
      ...s.addresses.map(a => `  listening ${a}`),
      `  status    ${peer.http === undefined ? '(no --http)' : `${peer.http.url}/status`}`,
      `  discovery ${config.mdns ? 'mDNS' : 'no mDNS'}${config.bootstrap.length > 0 ? ` + ${config.bootstrap.length} bootstrap address(es)` : ''}${config.swarmKeyFile !== undefined ? ', swarm key' : ''}${config.allowPeersFile !== undefined ? ', allowlist' : ''}`,
      `  holding   ${s.events.held} events in ${s.plans.length} plans`
    ].join('\n'))

  let last = ''
  const progress = setInterval(() => {
    const st = peer.status()
    const line = `${st.peers} peers, ${st.roster.length} in roster, ${st.events.held} events (${st.events.parked} parked), ${st.plans.length} plans` +
      st.plans.map(p => `\n  ${p.status.padEnd(16)} ${p.done}/${p.nodes} done  ${p.goal.slice(0, 60)}`).join('')
    if (line !== last) {
      last = line
      print({ event: 'progress', peers: st.peers, events: st.events, plans: st.plans }, line)
    }
  }, 5_000)

  await new Promise<void>(resolve => {
    const stop = (): void => { resolve() }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  clearInterval(progress)
  print({ event: 'stopping' }, 'stopping...')
  await peer.stop()
  return 0
}
