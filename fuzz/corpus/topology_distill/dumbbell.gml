# A dumbbell: two routers joined by a 10 Mbit/s bottleneck, two clients on
# each side at 100 Mbit/s (ModelNet's GML: nodes with role, edges with
# bandwidth in bit/s, delay in ms).
graph [
  node [ id 0 role "transit" ]
  node [ id 1 role "transit" ]
  node [ id 2 role "client" ]
  node [ id 3 role "client" ]
  node [ id 4 role "client" ]
  node [ id 5 role "client" ]
  edge [ source 0 target 1 bandwidth 10000000 delay 20 ]
  edge [ source 2 target 0 bandwidth 100000000 delay 1 ]
  edge [ source 3 target 0 bandwidth 100000000 delay 1 ]
  edge [ source 4 target 1 bandwidth 100000000 delay 1 ]
  edge [ source 5 target 1 bandwidth 100000000 delay 1 ]
]
