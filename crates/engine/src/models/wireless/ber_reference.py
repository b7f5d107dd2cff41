# Independent reference values for pipelab's wireless BER tests.
import math
B = 22e6
def dbpsk(s): return 0.5*math.exp(-s*B/1e6)
def dqpsk(s):
    x = s*B/2e6
    return (math.sqrt(2)+1)/math.sqrt(8*math.pi*math.sqrt(2))/math.sqrt(x)*math.exp(-(2-math.sqrt(2))*x)
def sep16(e2, n=200000):
    beta = math.sqrt(2*e2)
    # SEP = Q(beta) + int_0^inf (1-(1-erfc(t/sqrt2))^7) phi(t-beta) dt, composite Simpson
    lo = max(0.0, beta/2-14); hi = beta/2+14

    h = (hi-lo)/n
    def f(t):
        a = math.erfc(t/math.sqrt(2))
        g = -math.expm1(7*math.log1p(-a)) if a < 1 else 1.0
        return g*math.exp(-(t-beta)**2/2)/math.sqrt(2*math.pi)
    s = f(lo)+f(hi)
    for i in range(1,n):
        s += (4 if i%2 else 2)*f(lo+i*h)
    return 0.5*math.erfc(beta/math.sqrt(2)) + s*h/3
def cck55(s): return sep16(2*(s*B/5.5e6))
def cck11(s):
    p = sep16(2*(s*B/11e6))
    return 1-(1-p)**2 if p>1e-8 else -math.expm1(2*math.log1p(-p))
def bpsk(s): return 0.5*math.erfc(math.sqrt(s))
def qpsk(s): return 0.5*math.erfc(math.sqrt(s/2))
def qam(M,s):
    z = math.sqrt(s/((2*(M-1))/3)); k=math.sqrt(M)
    return (k-1)/(k*math.log2(k))*math.erfc(z)
def pe(p,b):
    D = math.sqrt(4*p*(1-p))
    if b==1: c=[(36,10),(211,12),(1404,14),(11633,16),(77433,18),(502690,20),(3322763,22),(21292910,24),(134365911,26)]; f=0.5
    if b==2: c=[(3,6),(70,7),(285,8),(1276,9),(6160,10),(27128,11),(117019,12),(498860,13),(2103891,14),(8784123,15)]; f=1/4
    if b==3: c=[(42,5),(201,6),(1492,7),(10469,8),(62935,9),(379644,10),(2253373,11),(13073811,12),(75152755,13),(428005675,14)]; f=1/6
    return min(1.0, f*sum(a*D**e for a,e in c))
modes = {
 'Dbpsk1': dbpsk, 'Dqpsk2': dqpsk, 'Cck5_5': cck55, 'Cck11': cck11,
 'Ofdm6': lambda s: pe(bpsk(s),1), 'Ofdm9': lambda s: pe(bpsk(s),3),
 'Ofdm12': lambda s: pe(qpsk(s),1), 'Ofdm18': lambda s: pe(qpsk(s),3),
 'Ofdm24': lambda s: pe(qam(16,s),1), 'Ofdm36': lambda s: pe(qam(16,s),3),
 'Ofdm48': lambda s: pe(qam(64,s),2), 'Ofdm54': lambda s: pe(qam(64,s),3),
}
import sys
for name,f in modes.items():
    # find dB range where 1e-250 < f < 0.9
    grid = [x/2 for x in range(-60, 100)]
    g = f
    if name.startswith('Cck'):
        g = (lambda s: sep16(2*(s*B/5.5e6), 400)) if name=='Cck5_5' else (lambda s: sep16(2*(s*B/11e6), 400))
    ok = [d for d in grid if 1e-250 < g(10**(d/10)) < 0.9]
    lo, hi = ok[0], ok[-1]
    lo = math.ceil(lo); hi = math.floor(hi)
    step = (hi-lo)/9
    pts = [round(lo+i*step, 2) for i in range(10)]
    vals = [(d, f(10**(d/10))) for d in pts]
    print(f"    (Modulation::{name}, &[" + ", ".join(f"({float(d)!r}, {v!r})" for d,v in vals) + "]),")
