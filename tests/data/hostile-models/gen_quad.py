# Writes a TFLite model whose G body subgraphs all point to one SubGraph
# table of K tensors (shared flatbuffer offsets): a small file holding G x K
# tensors. Usage: python gen_quad.py G K out.tflite (needs `flatbuffers`).
import flatbuffers, sys
G = int(sys.argv[1]); K = int(sys.argv[2]); out = sys.argv[3]
b = flatbuffers.Builder(1 << 20)
def ivec(vals):
    b.StartVector(4, len(vals), 4)
    for v in reversed(vals): b.PrependInt32(v)
    return b.EndVector()
def ovec(offs):
    b.StartVector(4, len(offs), 4)
    for o in reversed(offs): b.PrependUOffsetTRelative(o)
    return b.EndVector()
# one shared tensor table: shape [4] float32, name ""
shp = ivec([4]); nm = b.CreateString("")
b.StartObject(10); b.PrependUOffsetTRelativeSlot(0, shp, 0); b.PrependInt8Slot(1, 0, 0); b.PrependUOffsetTRelativeSlot(3, nm, 0); tt = b.EndObject()
shared_tensors = ovec([tt] * K)
empty = ivec([])
# one body op: opcode 0 (ADD) inputs [0,0] outputs [1] -> shared
bin_ = ivec([0, 0]); bout = ivec([1])
b.StartObject(13); b.PrependUint32Slot(0, 0, 0); b.PrependUOffsetTRelativeSlot(1, bin_, 0); b.PrependUOffsetTRelativeSlot(2, bout, 0); bop = b.EndObject()
bops = ovec([bop])
bodies = []
bname = b.CreateString("b")
b.StartObject(5); b.PrependUOffsetTRelativeSlot(0, shared_tensors, 0); b.PrependUOffsetTRelativeSlot(1, empty, 0)
b.PrependUOffsetTRelativeSlot(2, empty, 0); b.PrependUOffsetTRelativeSlot(3, bops, 0); b.PrependUOffsetTRelativeSlot(4, bname, 0)
body_table = b.EndObject()
# main: tensors [x, y]; G CALL_ONCE ops each with its own options; then ADD x,x->y
shx = ivec([4]); nx = b.CreateString("x"); ny = b.CreateString("y")
b.StartObject(10); b.PrependUOffsetTRelativeSlot(0, shx, 0); b.PrependUOffsetTRelativeSlot(3, nx, 0); tx = b.EndObject()
b.StartObject(10); b.PrependUOffsetTRelativeSlot(0, shx, 0); b.PrependUOffsetTRelativeSlot(3, ny, 0); ty = b.EndObject()
mt = ovec([tx, ty])
ops = []
for i in range(G):
    b.StartObject(1); b.PrependInt32Slot(0, i + 1, 0); opt = b.EndObject()
    b.StartObject(13); b.PrependUint32Slot(0, 1, 0); b.PrependUOffsetTRelativeSlot(1, empty, 0); b.PrependUOffsetTRelativeSlot(2, empty, 0)
    b.PrependUint8Slot(3, 103, 0); b.PrependUOffsetTRelativeSlot(4, opt, 0); ops.append(b.EndObject())
fin_in = ivec([0, 0]); fin_out = ivec([1])
b.StartObject(13); b.PrependUint32Slot(0, 0, 0); b.PrependUOffsetTRelativeSlot(1, fin_in, 0); b.PrependUOffsetTRelativeSlot(2, fin_out, 0); ops.append(b.EndObject())
mops = ovec(ops); mi = ivec([0]); mo = ivec([1]); mn = b.CreateString("main")
b.StartObject(5); b.PrependUOffsetTRelativeSlot(0, mt, 0); b.PrependUOffsetTRelativeSlot(1, mi, 0); b.PrependUOffsetTRelativeSlot(2, mo, 0)
b.PrependUOffsetTRelativeSlot(3, mops, 0); b.PrependUOffsetTRelativeSlot(4, mn, 0); main = b.EndObject()
sgs = ovec([main] + [body_table] * G)
codes = []
for code in (0, 129):
    b.StartObject(4); b.PrependInt8Slot(0, min(code, 127), 0); b.PrependInt32Slot(2, 1, 1); b.PrependInt32Slot(3, code, 0); codes.append(b.EndObject())
cv = ovec(codes)
b.StartObject(3); eb = b.EndObject(); bv = ovec([eb])
b.StartObject(8); b.PrependUint32Slot(0, 3, 0); b.PrependUOffsetTRelativeSlot(1, cv, 0); b.PrependUOffsetTRelativeSlot(2, sgs, 0); b.PrependUOffsetTRelativeSlot(4, bv, 0)
root = b.EndObject(); b.Finish(root, file_identifier=b'TFL3')
open(out, 'wb').write(bytes(b.Output()))
