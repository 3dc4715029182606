"""Wake-on-LAN: MAC parsing, magic packets and sending them over UDP."""
