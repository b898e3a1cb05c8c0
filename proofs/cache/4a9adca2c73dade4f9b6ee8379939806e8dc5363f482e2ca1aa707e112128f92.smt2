(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun E1_ () (_ BitVec 16))
(declare-fun E2_ () (_ BitVec 16))
(declare-fun GA_ () Bool)
(declare-fun GAp_ () Bool)
(declare-fun GP_ () (_ BitVec 15))
(declare-fun GPp_ () (_ BitVec 15))
(declare-fun GZ_ () Bool)
(declare-fun GZp_ () Bool)
(declare-fun x0 () (_ BitVec 8))
(declare-fun x1 () (_ BitVec 8))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x0))) false)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x1))) false)))
(assert
 (bvslt GP_ (_ bv4096 15)))
(assert
 (bvsgt GP_ (_ bv28672 15)))
(assert
 (let (($x50 (= GP_ (_ bv0 15))))
 (=> GZ_ $x50)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x0))) false)))
(assert
 (not (or (= (_ bv255 8) ((_ extract 7 0) ((_ extract 7 0) x1))) false)))
(assert
 (bvslt GPp_ (_ bv4096 15)))
(assert
 (bvsgt GPp_ (_ bv28672 15)))
(assert
 (let (($x62 (= GPp_ (_ bv0 15))))
 (=> GZp_ $x62)))
(assert
 (let (($x66 (bvsle GP_ GPp_)))
 (and $x66 (=> (and GZ_ (not GZp_)) (and (distinct GPp_ (_ bv0 15)) true)) (=> (and GZp_ (not GZ_)) (and (distinct GP_ (_ bv0 15)) true)))))
(assert
 (let (($x84 (bvsle E1_ (_ bv254 16))))
 (and (bvsge E1_ (_ bv65397 16)) $x84)))
(assert
 (let (($x89 (bvsle E2_ (_ bv254 16))))
 (and (bvsge E2_ (_ bv65397 16)) $x89)))
(assert
 (let ((?x101 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
 (let ((?x102 ((_ sign_extend 3) ?x101)))
 (bvsle (ite (or (or GZ_ false) false) (_ bv65397 16) ?x102) E1_))))
(assert
 (bvslt E1_ E2_))
(assert
 (let ((?x101 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
 (let ((?x102 ((_ sign_extend 3) ?x101)))
 (= (ite (or (or GZp_ false) false) (_ bv65397 16) ?x102) E2_))))
(assert
 (let ((?x101 (bvadd ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x0))) (_ bv127 11))) ((_ sign_extend 2) (bvsub ((_ zero_extend 3) ((_ extract 7 0) ((_ extract 7 0) x1))) (_ bv127 11))))))
(let ((?x102 ((_ sign_extend 3) ?x101)))
(let ((?x182 (bvsub E1_ ?x102)))
(let ((?x186 ((_ zero_extend 35) (bvadd (ite (bvsgt (_ bv0 16) ?x182) (_ bv0 16) ?x182) (_ bv0 16)))))
(let ((?x146 ((_ zero_extend 17) (ite true (_ bv1 1) (_ bv0 1)))))
(let ((?x147 (bvmul ?x146 ?x146)))
(let ((?x180 ((_ zero_extend 33) (bvmul ((_ zero_extend 3) (ite (bvslt GP_ (_ bv0 15)) (bvneg GP_) GP_)) ?x147))))
(let ((?x190 ((_ zero_extend 5) (bvlshr (bvshl ?x180 (_ bv33 51)) (ite (bvugt ?x186 (_ bv51 51)) (_ bv51 51) ?x186)))))
(let (($x172 (ite (= (_ bv0 15) GP_) GA_ (bvsgt (_ bv0 15) GP_))))
(let (($x173 (ite false true $x172)))
(let ((?x167 ((_ zero_extend 436) (bvsub E2_ E1_))))
(let ((?x156 (bvadd (ite (bvsgt (_ bv0 16) (bvsub E2_ ?x102)) (_ bv0 16) (bvsub E2_ ?x102)) (_ bv0 16))))
(let ((?x157 ((_ zero_extend 35) ?x156)))
(let ((?x148 (bvmul ((_ zero_extend 3) (ite (bvslt GPp_ (_ bv0 15)) (bvneg GPp_) GPp_)) ?x147)))
(let ((?x161 (bvlshr (bvshl ((_ zero_extend 33) ?x148) (_ bv33 51)) (ite (bvugt ?x157 (_ bv51 51)) (_ bv51 51) ?x157))))
(let ((?x162 ((_ zero_extend 5) ?x161)))
(let (($x136 (ite (= (_ bv0 15) GPp_) GAp_ (bvsgt (_ bv0 15) GPp_))))
(let (($x137 (ite false true $x136)))
(let ((?x168 (bvshl ((_ sign_extend 396) (ite (ite false false $x137) (bvsub (_ bv0 56) ?x162) ?x162)) ?x167)))
(let ((?x194 (bvsub ?x168 ((_ sign_extend 396) (ite (ite false false $x173) (bvsub (_ bv0 56) ?x190) ?x190)))))
(not (bvsge ?x194 (bvshl (_ bv4 452) ?x167))))))))))))))))))))))))
(check-sat)
